// GPU memory of other libraries as Buffers, in place: DLPack producers reporting
// kDLCUDA (torch, CuPy, JAX) and objects with __cuda_array_interface__ (Numba); and, for
// kernel arguments, a cache of those imports per object (cached_gpu_argument).
#include <algorithm>
#include <cstdint>
#include <unordered_map>

#include "bindings.hpp"

namespace metalcall::python {

namespace {

std::string name_of(const py::handle& x) { return py::str(py::type::of(x).attr("__name__")); }

// The CAI's byte strides must describe C order (dimensions of one may have any stride).
void check_c_contiguous(const py::object& strides, const std::vector<py::ssize_t>& shape, py::ssize_t itemsize,
                        const std::string& what) {
  if (strides.is_none()) return;
  auto s = strides.cast<std::vector<long long>>();
  if (s.size() != shape.size()) throw ArgumentError("the " + what + "'s __cuda_array_interface__ strides do not match its shape");
  long long expected = itemsize;
  for (std::size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && s[i] != expected) {
      throw ArgumentError("the " + what + " is not C-contiguous; pass a contiguous copy (cupy.ascontiguousarray(x))");
    }
    expected *= shape[i];
  }
}

// Keeps the producer alive while a Buffer (and queued work) uses its memory.
std::shared_ptr<void> keep_alive(const py::handle& x) {
  PyObject* o = x.inc_ref().ptr();
  return std::shared_ptr<void>(o, [](void* p) {
    PyGILState_STATE state;  // let go of from any thread (leaked at exit)
    if (!Py_IsInitialized() || !ensure_gil_unless_exiting(&state)) return;
    Py_DECREF(static_cast<PyObject*>(p));
    PyGILState_Release(state);
  });
}

}  // namespace

PyBuffer import_cuda_array(const py::handle& x, const Device& device) {
  const std::string what = name_of(x);
  py::dict cai = x.attr("__cuda_array_interface__");
  if (device.info().backend != "cuda") {
    throw ArgumentError("the " + what + " is CUDA memory (__cuda_array_interface__), but a " + device.info().backend +
                        " device uses host memory (kDLCPU) only; run the kernel on mc.Device(\"cuda\"), or copy it "
                        "to the host first");
  }
  if (cai.contains("mask") && !cai["mask"].is_none()) throw ArgumentError("the " + what + " is a masked array; pass the data alone");
  py::dtype dtype(cai["typestr"].cast<std::string>());
  if (dtype.attr("byteorder").cast<std::string>() == ">") throw ArgumentError("the " + what + " is big-endian; kernels read native byte order");
  std::vector<py::ssize_t> shape;
  for (const auto& n : cai["shape"].cast<py::tuple>()) shape.push_back(n.cast<py::ssize_t>());
  check_c_contiguous(cai.contains("strides") ? py::object(cai["strides"]) : py::object(py::none()), shape,
                     dtype.itemsize(), what);
  auto data = cai["data"].cast<py::tuple>();
  if (data[1].cast<bool>()) {
    throw ArgumentError("the " + what + " is read-only, and kernels may write a Buffer; pass a writable copy");
  }
  std::size_t count = 1;
  for (auto n : shape) count *= static_cast<std::size_t>(n);
  // The CAI stream rule (v3): our stream waits on an event recorded on the producer's
  // stream now, so the producer's pending work on the memory comes first; the host does not wait.
  if (cai.contains("stream") && !cai["stream"].is_none()) {
    const auto stream = cai["stream"].cast<std::uintptr_t>();
    if (stream == 0) throw ArgumentError("the " + what + "'s __cuda_array_interface__ has stream 0, which the protocol forbids");
    device.wait_for_stream(stream);
  }
  void* ptr = reinterpret_cast<void*>(data[0].cast<std::uintptr_t>());
  Buffer buffer = device.wrap(ptr, count * static_cast<std::size_t>(dtype.itemsize()), keep_alive(x));
  return describe_buffer(device, std::move(buffer), shape, dtype);
}

std::optional<PyBuffer> import_gpu_memory(const py::handle& x, const Device& device) {
  // Not by the buffer protocol: CuPy arrays have one (that fails). metalcall Buffers stay Buffers.
  if (py::isinstance<PyBuffer>(x)) return std::nullopt;
  if (py::hasattr(x, "__dlpack__") && py::hasattr(x, "__dlpack_device__")) {
    if (!dlpack_on_gpu(x)) return std::nullopt;
    return import_dlpack(x, device);
  }
  if (py::hasattr(x, "__cuda_array_interface__")) return import_cuda_array(x, device);
  return std::nullopt;
}

// ---- kernel arguments: cached imports ----
//
// Importing through DLPack costs a capsule and an event per argument per call (~28 µs on an
// H200). A kernel argument instead reads what the object says of its memory now (torch:
// data_ptr, shape, dtype, contiguity; others: __cuda_array_interface__), finds the import made
// for that object before (its Buffer over the memory, checked by the driver once) and uses it
// if the object still says the same; else it imports again. Entries are keyed by the object's
// identity and dropped by a weak reference's callback when it dies; objects without weak
// references are imported each call (still without DLPack). The call's Buffer keeps the object
// alive until the call is done (Buffer::kept_with); the cached one owns nothing.

namespace {

// What an object says of its memory now; a cached import is used while this stays the same.
struct Described {
  std::uintptr_t ptr = 0;
  std::vector<py::ssize_t> shape;
  py::object type_key;       // torch: the torch.dtype; CAI: the typestr
  bool ordered = false;      // the producer named a stream to order after
  std::uintptr_t stream = 0;
};

struct CachedImport {
  py::object weak;  // weakref.ref(object, drop this entry)
  Device device;
  Described what;
  PyBuffer base;
};

using ImportCache = std::unordered_map<PyObject*, CachedImport>;
ImportCache& import_cache() {
  static auto& cache = *new ImportCache;  // never destroyed: it holds Python objects (the GIL guards it)
  return cache;
}
constexpr std::size_t kMaxCachedImports = 4096;  // beyond this (objects that live long) start over

// torch.Tensor once torch is imported (looked up until then: torch may come later).
PyObject* torch_tensor_type() {
  static PyObject* type = nullptr;
  if (type) return type;
  PyObject* modules = PyImport_GetModuleDict();
  PyObject* torch = PyDict_GetItemString(modules, "torch");  // borrowed
  if (!torch) return nullptr;
  PyObject* tensor = PyObject_GetAttrString(torch, "Tensor");
  if (!tensor) {
    PyErr_Clear();
    return nullptr;
  }
  type = tensor;  // kept for the process
  return type;
}

bool truthy(const py::handle& h) {
  const int r = PyObject_IsTrue(h.ptr());
  if (r < 0) throw py::error_already_set();
  return r == 1;
}

std::vector<py::ssize_t> shape_of(const py::handle& sequence) {
  std::vector<py::ssize_t> shape;
  for (const auto& n : py::reinterpret_borrow<py::sequence>(sequence)) shape.push_back(n.cast<py::ssize_t>());
  return shape;
}

// torch's current stream on GPU `index` as a raw handle: where work on its tensors was queued
// (what __dlpack__ orders after). torch._C._cuda_getCurrentRawStream where it exists (a C
// function), else torch.cuda.current_stream(index).cuda_stream.
std::uintptr_t torch_current_stream(int index) {
  static PyObject* raw = [] {
    py::object c = py::module_::import("torch").attr("_C");
    return py::hasattr(c, "_cuda_getCurrentRawStream") ? py::object(c.attr("_cuda_getCurrentRawStream")).release().ptr() : nullptr;
  }();  // kept for the process
  if (raw) return py::reinterpret_borrow<py::object>(raw)(index).cast<std::uintptr_t>();
  return py::module_::import("torch").attr("cuda").attr("current_stream")(index).attr("cuda_stream").cast<std::uintptr_t>();
}

// A torch CUDA tensor on `device`'s GPU, usable in place; nullopt leaves it to DLPack (a CPU
// tensor, another GPU, one that requires grad, a sparse one, whatever torch will not answer
// here: DLPack then orders it or says why not).
std::optional<Described> describe_torch(const py::handle& x, const Device& device) {
  try {
    if (!truthy(x.attr("is_cuda")) || truthy(x.attr("requires_grad")) || x.attr("is_sparse").cast<bool>())
      return std::nullopt;
    const int index = x.attr("get_device")().cast<int>();
    if (index != device.info().index) return std::nullopt;
    if (!truthy(x.attr("is_contiguous")())) {
      throw ArgumentError("the Tensor is not C-contiguous; pass a contiguous copy (x.contiguous())");
    }
    Described d;
    d.ptr = x.attr("data_ptr")().cast<std::uintptr_t>();
    d.shape = shape_of(x.attr("shape"));
    d.type_key = x.attr("dtype");
    d.ordered = true;
    d.stream = torch_current_stream(index);
    return d;
  } catch (py::error_already_set&) {
    return std::nullopt;
  }
}

// NumPy's dtype for a torch dtype ("torch.float32" -> float32); none for those NumPy lacks (bfloat16).
std::optional<py::dtype> numpy_dtype_of_torch(const py::handle& dtype) {
  std::string name = py::str(dtype);
  if (name.rfind("torch.", 0) == 0) name = name.substr(6);
  static const char* const names[] = {"float16", "float32", "float64", "int8",   "int16",     "int32",     "int64",
                                      "uint8",   "uint16",  "uint32",  "uint64", "complex64", "complex128"};
  for (const char* n : names)
    if (name == n) return py::dtype(std::string(n));
  if (name == "bool") return py::dtype("?");
  return std::nullopt;
}

// An object with __cuda_array_interface__; nullopt when it has none, or when its interface
// names no stream (version 2) and DLPack can order it instead.
std::optional<Described> describe_cai(const py::handle& x) {
  PyObject* cai = PyObject_GetAttrString(x.ptr(), "__cuda_array_interface__");
  if (!cai) {
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) throw py::error_already_set();
    PyErr_Clear();
    return std::nullopt;
  }
  py::dict d = py::reinterpret_steal<py::dict>(cai);
  if (!d.contains("stream") && py::hasattr(x, "__dlpack__")) return std::nullopt;
  const std::string what = name_of(x);
  if (d.contains("mask") && !d["mask"].is_none()) throw ArgumentError("the " + what + " is a masked array; pass the data alone");
  py::tuple data = d["data"].cast<py::tuple>();
  if (truthy(data[1])) throw ArgumentError("the " + what + " is read-only, and kernels may write a Buffer; pass a writable copy");
  Described out;
  out.ptr = data[0].cast<std::uintptr_t>();
  out.shape = shape_of(d["shape"]);
  out.type_key = d["typestr"];
  // C order each call (a view's strides may change under the same pointer and shape).
  if (d.contains("strides") && !d["strides"].is_none()) {
    check_c_contiguous(d["strides"], out.shape, py::dtype(out.type_key.cast<std::string>()).itemsize(), what);
  }
  if (d.contains("stream") && !d["stream"].is_none()) {
    out.ordered = true;
    out.stream = d["stream"].cast<std::uintptr_t>();
    if (out.stream == 0) throw ArgumentError("the " + what + "'s __cuda_array_interface__ has stream 0, which the protocol forbids");
  }
  return out;
}

bool same(const Described& a, const Described& b) {
  if (a.ptr != b.ptr || a.shape != b.shape) return false;
  if (a.type_key.ptr() == b.type_key.ptr()) return true;  // torch dtypes are singletons
  return PyObject_RichCompareBool(a.type_key.ptr(), b.type_key.ptr(), Py_EQ) == 1;
}

// The import of `x` as `what` describes it: a Buffer over the memory that owns nothing.
PyBuffer import_described(const py::handle& x, const Device& device, const Described& what, bool torch) {
  const std::string name = name_of(x);
  py::dtype dtype;
  if (torch) {
    std::optional<py::dtype> d = numpy_dtype_of_torch(what.type_key);
    if (!d) throw ArgumentError("the Tensor's dtype " + std::string(py::str(what.type_key)) + " has no NumPy equivalent");
    dtype = *d;
  } else {
    dtype = py::dtype(what.type_key.cast<std::string>());
    if (dtype.attr("byteorder").cast<std::string>() == ">") throw ArgumentError("the " + name + " is big-endian; kernels read native byte order");
  }
  std::size_t count = 1;
  for (auto n : what.shape) count *= static_cast<std::size_t>(n);
  Buffer buffer = device.wrap(reinterpret_cast<void*>(what.ptr), count * static_cast<std::size_t>(dtype.itemsize()), nullptr);
  return describe_buffer(device, std::move(buffer), what.shape, dtype);
}

void remember(const py::handle& x, const Device& device, const Described& what, const PyBuffer& base) {
  ImportCache& cache = import_cache();
  if (cache.size() >= kMaxCachedImports) cache.clear();
  PyObject* key = x.ptr();
  py::cpp_function drop([key](py::handle ref) {
    ImportCache& c = import_cache();
    auto it = c.find(key);
    if (it != c.end() && it->second.weak.ptr() == ref.ptr()) c.erase(it);
  });
  PyObject* weak = PyWeakref_NewRef(x.ptr(), drop.ptr());
  if (!weak) {  // no weak references to this type: imported each call
    PyErr_Clear();
    return;
  }
  cache[key] = CachedImport{py::reinterpret_steal<py::object>(weak), device, what, base};
}

}  // namespace

std::optional<PyBuffer> cached_gpu_argument(const py::handle& x, const Device& device,
                                            std::vector<std::uintptr_t>& ordered) {
  PyObject* tensor_type = torch_tensor_type();
  const bool torch = tensor_type && PyObject_IsInstance(x.ptr(), tensor_type) == 1;
  std::optional<Described> what = torch ? describe_torch(x, device) : describe_cai(x);
  if (!what) return std::nullopt;
  // The producer's queued work on the memory comes first (an event; the host does not wait).
  const std::uintptr_t ours = device.stream_handle();
  if (what->ordered && what->stream != ours &&
      std::find(ordered.begin(), ordered.end(), what->stream) == ordered.end()) {
    device.wait_for_stream(what->stream);
    ordered.push_back(what->stream);
  }
  ImportCache& cache = import_cache();
  auto it = cache.find(x.ptr());
  PyBuffer base;
  if (it != cache.end() && it->second.device.impl() == device.impl() && same(it->second.what, *what)) {
    base = it->second.base;
  } else {
    if (it != cache.end()) cache.erase(it);
    base = import_described(x, device, *what, torch);
    remember(x, device, *what, base);
  }
  base.buffer = base.buffer.kept_with(keep_alive(x));
  return base;
}

}  // namespace metalcall::python
