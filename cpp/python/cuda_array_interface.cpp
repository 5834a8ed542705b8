// Reading an object's __cuda_array_interface__ (versions 2 and 3), once for both of its users:
// kernel arguments (foreign_arguments.cpp, every call: by interned keys, no copies of the dict)
// and dev.asarray / imports without DLPack (gpu_import.cpp).
#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "bindings.hpp"

namespace metalcall::python {

namespace {

struct Keys {
  PyObject* data = PyUnicode_InternFromString("data");
  PyObject* typestr = PyUnicode_InternFromString("typestr");
  PyObject* shape = PyUnicode_InternFromString("shape");
  PyObject* strides = PyUnicode_InternFromString("strides");
  PyObject* stream = PyUnicode_InternFromString("stream");
  PyObject* mask = PyUnicode_InternFromString("mask");
  PyObject* interface = PyUnicode_InternFromString("__cuda_array_interface__");
};
const Keys& keys() {
  static const Keys& k = *new Keys;  // never destroyed (kept for the process)
  return k;
}

// NumPy's dtype for an interface typestr ("<f4"), kept per distinct text: making one from the
// text each call took about as long as the rest of the interface's parse.
py::dtype dtype_of_typestr(PyObject* typestr) {
  static auto& known = *new std::unordered_map<std::string, py::dtype>();  // never destroyed (the GIL guards it)
  Py_ssize_t size = 0;
  const char* text = PyUnicode_AsUTF8AndSize(typestr, &size);
  if (!text) throw py::error_already_set();
  std::string key(text, static_cast<std::size_t>(size));
  const auto hit = known.find(key);
  if (hit != known.end()) return hit->second;
  py::dtype dtype(key);
  if (known.size() < 64) known.emplace(std::move(key), dtype);
  return dtype;
}

// The ints of an interface's shape or strides (any sequence of ints); false when it is not one.
bool read_ints(PyObject* sequence, std::vector<long long>& out) {
  py::object items = py::reinterpret_steal<py::object>(PySequence_Fast(sequence, "not a sequence"));
  if (!items) {
    PyErr_Clear();
    return false;
  }
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(items.ptr());
  out.resize(static_cast<std::size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    const long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(items.ptr(), i));
    if (v == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    out[static_cast<std::size_t>(i)] = v;
  }
  return true;
}

}  // namespace

std::optional<CudaArrayView> read_cuda_array_interface(const py::handle& x) {
  const Keys& k = keys();
  PyObject* cai = PyObject_GetAttr(x.ptr(), k.interface);
  if (!cai) {
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) throw py::error_already_set();
    PyErr_Clear();
    return std::nullopt;
  }
  const py::object owner = py::reinterpret_steal<py::object>(cai);
  // The type's name is made only for an error.
  auto what = [&x] { return std::string(py::str(py::type::of(x).attr("__name__"))); };
  if (!PyDict_Check(cai)) throw ArgumentError("the " + what() + "'s __cuda_array_interface__ is not a dict");
  auto item = [cai](PyObject* key) {  // borrowed; null when absent
    PyObject* v = PyDict_GetItemWithError(cai, key);
    if (!v && PyErr_Occurred()) throw py::error_already_set();
    return v;
  };
  PyObject* mask = item(k.mask);
  if (mask && mask != Py_None) throw ArgumentError("the " + what() + " is a masked array; pass the data alone");
  PyObject* data = item(k.data);
  PyObject* typestr = item(k.typestr);
  PyObject* shape_items = item(k.shape);
  std::vector<long long> shape, strides;
  if (!data || !PyTuple_Check(data) || PyTuple_GET_SIZE(data) != 2 || !typestr || !PyUnicode_Check(typestr) ||
      !shape_items || !read_ints(shape_items, shape)) {
    throw ArgumentError("the " + what() + "'s __cuda_array_interface__ lacks a (pointer, read-only) data tuple, a "
                        "typestr or a shape of ints");
  }
  CudaArrayView out;
  const int read_only = PyObject_IsTrue(PyTuple_GET_ITEM(data, 1));
  if (read_only < 0) throw py::error_already_set();
  out.read_only = read_only == 1;
  py::dtype dtype = dtype_of_typestr(typestr);
  if (py::detail::array_descriptor_proxy(dtype.ptr())->byteorder == '>') {
    throw ArgumentError("the " + what() + " is big-endian; kernels read native byte order");
  }
  // C order (dimensions of one may have any stride).
  PyObject* strides_items = item(k.strides);
  if (strides_items && strides_items != Py_None) {
    if (!read_ints(strides_items, strides) || strides.size() != shape.size()) {
      throw ArgumentError("the " + what() + "'s __cuda_array_interface__ strides do not match its shape");
    }
    long long expected = dtype.itemsize();
    for (std::size_t i = shape.size(); i-- > 0;) {
      if (shape[i] != 1 && strides[i] != expected) {
        throw ArgumentError("the " + what() + " is not C-contiguous; pass a contiguous copy (cupy.ascontiguousarray(x))");
      }
      expected *= shape[i];
    }
  }
  void* pointer = PyLong_AsVoidPtr(PyTuple_GET_ITEM(data, 0));
  if (!pointer && PyErr_Occurred()) throw py::error_already_set();
  out.ptr = reinterpret_cast<std::uintptr_t>(pointer);
  out.nbytes = static_cast<std::size_t>(dtype.itemsize());
  out.shape.reserve(shape.size());
  const bool empty = std::find(shape.begin(), shape.end(), 0) != shape.end();
  for (auto s : shape) {
    if (s < 0) throw ArgumentError("the " + what() + "'s __cuda_array_interface__ has a negative dimension");
    // A product past the address space wrapped to a small size (as dlpack.cpp's wrap_tensor checks).
    if (!empty && out.nbytes > static_cast<std::size_t>(PTRDIFF_MAX) / static_cast<std::size_t>(s)) {
      throw ArgumentError("the " + what() + "'s __cuda_array_interface__ shape holds more bytes than an address space");
    }
    out.nbytes *= static_cast<std::size_t>(s);
    out.shape.push_back(static_cast<py::ssize_t>(s));
  }
  out.dtype = std::move(dtype);
  PyObject* stream = item(k.stream);
  out.has_stream_key = stream != nullptr;
  if (stream && stream != Py_None) {
    void* handle = PyLong_AsVoidPtr(stream);
    if (!handle && PyErr_Occurred()) throw py::error_already_set();
    out.stream = reinterpret_cast<std::uintptr_t>(handle);
    if (*out.stream == 0) throw ArgumentError("the " + what() + "'s __cuda_array_interface__ has stream 0, which the protocol forbids");
  }
  return out;
}

}  // namespace metalcall::python
