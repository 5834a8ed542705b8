// Foreign tensors as kernel arguments at Buffer speed (P2.2 item 1): torch tensors, CuPy arrays
// and __cuda_array_interface__ objects are described each call by a few attribute reads (no
// DLPack capsule), GPU memory is imported once per object (a weakref-dropped cache, checked each
// call against what the object says now), and the producer's current stream is read once per
// call and ordered by an event only when it differs from the device's.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "bindings.hpp"

namespace metalcall::python {

namespace {

// Attribute names, interned once: a lookup by a str object skips making one per read.
#define MC_NAME(attribute) PyObject* attribute = PyUnicode_InternFromString(#attribute);
struct Names {
  MC_NAME(get_device) MC_NAME(requires_grad) MC_NAME(dtype) MC_NAME(is_contiguous) MC_NAME(is_neg) MC_NAME(is_conj)
  MC_NAME(data_ptr) MC_NAME(nbytes) MC_NAME(data) MC_NAME(ptr) MC_NAME(device_id) MC_NAME(_c_contiguous)
  MC_NAME(__cuda_array_interface__) MC_NAME(__dlpack__) MC_NAME(stream) MC_NAME(mask) MC_NAME(typestr) MC_NAME(shape)
  MC_NAME(strides)
};
#undef MC_NAME
const Names& names() {
  static const Names& n = *new Names;  // never destroyed (kept for the process)
  return n;
}

py::object get(PyObject* o, PyObject* name) {
  PyObject* r = PyObject_GetAttr(o, name);
  if (!r) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(r);
}

py::object invoke(PyObject* o, PyObject* name) {
  PyObject* r = PyObject_CallMethodNoArgs(o, name);
  if (!r) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(r);
}

bool truthy(const py::handle& h) {
  const int r = PyObject_IsTrue(h.ptr());
  if (r < 0) throw py::error_already_set();
  return r == 1;
}

std::uintptr_t as_address(const py::handle& h) {
  // PyLong_AsVoidPtr: an unsigned long's digit loop on LP64 (PyLong_AsUnsignedLongLong goes
  // through the generic byte-array conversion, 2% of a call with three torch tensors in perf).
  void* v = PyLong_AsVoidPtr(h.ptr());
  if (!v && PyErr_Occurred()) throw py::error_already_set();
  return reinterpret_cast<std::uintptr_t>(v);
}

long long as_long(const py::handle& h) {
  const long long v = PyLong_AsLongLong(h.ptr());
  if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
  return v;
}

// `module.attribute` once the module is imported (looked up until then: it may come later;
// by an interned name, as every argument of every call asks).
PyObject* type_in(PyObject* module, const char* attribute, PyObject** slot) {
  if (*slot) return *slot;
  PyObject* m = PyDict_GetItemWithError(PyImport_GetModuleDict(), module);  // borrowed
  if (!m) {
    PyErr_Clear();
    return nullptr;
  }
  PyObject* t = PyObject_GetAttrString(m, attribute);
  if (!t || !PyType_Check(t)) {
    PyErr_Clear();
    Py_XDECREF(t);
    return nullptr;
  }
  *slot = t;  // kept for the process
  return t;
}

PyObject* torch_tensor_type() {
  static PyObject* type = nullptr;
  static PyObject* name = PyUnicode_InternFromString("torch");
  return type_in(name, "Tensor", &type);
}

// torch.Tensor's C accessors, taken once from the type that defines them (torch._C.TensorBase,
// an immutable type) where torch.Tensor's Python class defines none of those names: an exact
// torch.Tensor's attributes are these, and calling them directly skips the attribute lookups
// (the type's, and the instance dict's for methods), which cost about what torch's own reads do.
// Subclasses (nn.Parameter, user classes) are read through the attribute lookup: they may override.
struct TorchAccessors {
  PyObject* requires_grad = nullptr;  // getset descriptors
  PyObject* dtype = nullptr;
  PyObject* nbytes = nullptr;
  PyObject* is_contiguous = nullptr;  // method descriptors
  PyObject* is_neg = nullptr;
  PyObject* is_conj = nullptr;
  PyObject* data_ptr = nullptr;
  PyObject* get_device = nullptr;
};

// `name` as torch.Tensor's base defines it, or null (torch.Tensor overrides it, or no such accessor).
PyObject* base_accessor(PyObject* tensor_type, PyObject* name) {
  PyTypeObject* t = reinterpret_cast<PyTypeObject*>(tensor_type);
  PyTypeObject* base = t->tp_base;
#ifdef Py_TPFLAGS_IMMUTABLETYPE
  if (!base || !(base->tp_flags & Py_TPFLAGS_IMMUTABLETYPE) || !t->tp_dict || !base->tp_dict) return nullptr;
#else
  return nullptr;  // Python 3.9 cannot say the base is immutable: read by name
#endif
  if (PyDict_GetItemWithError(t->tp_dict, name) || PyErr_Occurred()) {
    PyErr_Clear();
    return nullptr;
  }
  PyObject* found = PyDict_GetItemWithError(base->tp_dict, name);  // borrowed; the immutable type keeps it
  if (!found) {
    PyErr_Clear();
    return nullptr;
  }
  const bool getter = Py_IS_TYPE(found, &PyGetSetDescr_Type);
  const bool method = Py_IS_TYPE(found, &PyMethodDescr_Type);
  return getter || method ? found : nullptr;
}

const TorchAccessors& torch_accessors(PyObject* tensor_type) {
  static const TorchAccessors& a = *[tensor_type] {
    const Names& n = names();
    auto* out = new TorchAccessors;  // kept for the process
    out->requires_grad = base_accessor(tensor_type, n.requires_grad);
    out->dtype = base_accessor(tensor_type, n.dtype);
    out->nbytes = base_accessor(tensor_type, n.nbytes);
    out->is_contiguous = base_accessor(tensor_type, n.is_contiguous);
    out->is_neg = base_accessor(tensor_type, n.is_neg);
    out->is_conj = base_accessor(tensor_type, n.is_conj);
    out->data_ptr = base_accessor(tensor_type, n.data_ptr);
    out->get_device = base_accessor(tensor_type, n.get_device);
    return out;
  }();
  return a;
}

// One accessor called as its C function: a getter's `get`, a method's `ml_meth` by its calling
// convention. The descriptor's own call checks the instance's type (known exact here) and the
// recursion depth around the same function: six of them a tensor were a measurable part of it.
PyObject* call_accessor(PyObject* accessor, PyObject* self) {
  if (Py_IS_TYPE(accessor, &PyGetSetDescr_Type)) {
    PyGetSetDef* g = reinterpret_cast<PyGetSetDescrObject*>(accessor)->d_getset;
    if (g->get) return g->get(self, g->closure);
    // No getter: the descriptor's own read raises what Python would.
    return Py_TYPE(accessor)->tp_descr_get(accessor, self, reinterpret_cast<PyObject*>(Py_TYPE(self)));
  } else {
    PyMethodDef* m = reinterpret_cast<PyMethodDescrObject*>(accessor)->d_method;
    static PyObject* const empty = PyTuple_New(0);  // kept for the process
    switch (m->ml_flags & (METH_VARARGS | METH_FASTCALL | METH_NOARGS | METH_O | METH_KEYWORDS | METH_METHOD)) {
      case METH_NOARGS:
        return m->ml_meth(self, nullptr);
      case METH_VARARGS:
        return m->ml_meth(self, empty);
      case METH_VARARGS | METH_KEYWORDS:
        return reinterpret_cast<PyCFunctionWithKeywords>(reinterpret_cast<void (*)()>(m->ml_meth))(self, empty, nullptr);
      default:
        break;
    }
  }
  return PyObject_Vectorcall(accessor, &self, 1, nullptr);  // other conventions: the descriptor's own call
}

// Reads one torch tensor's attributes: by torch's accessors for an exact torch.Tensor, else by name.
class TensorReads {
 public:
  explicit TensorReads(PyObject* x) : x_(x) {
    PyObject* type = torch_tensor_type();
    direct_ = type && reinterpret_cast<PyObject*>(Py_TYPE(x)) == type ? &torch_accessors(type) : nullptr;
  }
  py::object attribute(PyObject* TorchAccessors::*accessor, PyObject* name) const { return read(accessor, name, get); }
  py::object call(PyObject* TorchAccessors::*accessor, PyObject* name) const { return read(accessor, name, invoke); }

 private:
  py::object read(PyObject* TorchAccessors::*accessor, PyObject* name, py::object (*by_name)(PyObject*, PyObject*)) const {
    PyObject* d = direct_ ? direct_->*accessor : nullptr;
    if (!d) return by_name(x_, name);
    PyObject* r = call_accessor(d, x_);
    if (!r) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(r);
  }
  PyObject* x_;
  const TorchAccessors* direct_ = nullptr;
};

PyObject* cupy_array_type() {
  static PyObject* type = nullptr;
  static PyObject* name = PyUnicode_InternFromString("cupy");
  return type_in(name, "ndarray", &type);
}

// NumPy's dtype for a torch dtype, by the torch dtype object (torch's dtypes are singletons,
// kept referenced here); none for those NumPy lacks (bfloat16, the float8 types).
std::optional<py::dtype> numpy_dtype_of_torch(const py::handle& dtype) {
  static auto& known = *new std::unordered_map<PyObject*, std::optional<py::dtype>>();  // never destroyed
  const auto hit = known.find(dtype.ptr());
  if (hit != known.end()) return hit->second;
  std::string name = py::str(dtype);
  if (name.rfind("torch.", 0) == 0) name = name.substr(6);
  static const char* const numpy_names[] = {"float16", "float32", "float64", "int8",   "int16",     "int32",     "int64",
                                            "uint8",   "uint16",  "uint32",  "uint64", "complex64", "complex128"};
  std::optional<py::dtype> out;
  for (const char* n : numpy_names)
    if (name == n) out = py::dtype(std::string(n));
  if (name == "bool") out = py::dtype("?");
  if (known.size() < 64) known.emplace(dtype.inc_ref().ptr(), out);
  return out;
}

// What an object says of its memory now; a cached import is used while this stays the same.
struct Described {
  std::uintptr_t ptr = 0;
  std::size_t nbytes = 0;
  py::dtype dtype;
  bool host = false;          // host memory (a CPU tensor): used in place, never imported
  bool ordered = false;       // the producer named a stream to order after
  std::uintptr_t stream = 0;
  long long index = -1;       // torch: get_device() (-1: host memory)
  py::object token;           // torch: its dtype object; CuPy: its MemoryPointer (see Known)
};

// ---- what each object said last time ----

// The last description of a live object on one device, and its import (GPU memory). A call
// whose object says the same again skips the reads that cannot change while the rest stays the
// same: torch's get_device() (a tensor's device changes only with its memory, and unified
// addressing gives host and GPU memory distinct addresses) and the NumPy dtype for the same torch
// dtype object; CuPy's data.ptr and data.device_id while `data` is the same MemoryPointer (which
// never changes; the entry holds it, so no other one takes its address). The entry goes when the
// object dies (its weak reference's callback), so a new object at a dead one's address finds none.
struct Known {
  PyObject* weak;  // weakref.ref(object, drop_known): owned
  Device device;
  Described what;
  Buffer base;     // GPU memory: the import, owning nothing
};

using KnownCache = std::unordered_map<PyObject*, Known>;
KnownCache& known_cache() {
  static auto& cache = *new KnownCache;  // never destroyed: it holds Python objects (the GIL guards it)
  return cache;
}
std::unordered_map<PyObject*, PyObject*>& object_of_weak() {  // an entry's weak reference -> its key
  static auto& map = *new std::unordered_map<PyObject*, PyObject*>;  // never destroyed, as the cache
  return map;
}
constexpr std::size_t kMaxKnown = 4096;  // beyond this (objects that live long) start over

void forget(KnownCache::iterator it) {
  PyObject* weak = it->second.weak;
  object_of_weak().erase(weak);
  known_cache().erase(it);
  Py_DECREF(weak);
}

void forget_all() {
  KnownCache& cache = known_cache();
  while (!cache.empty()) forget(cache.begin());
}

// The weak references' one callback: drops the entry of the object that died.
PyObject* drop_known(PyObject*, PyObject* ref) {
  const auto of = object_of_weak().find(ref);
  if (of != object_of_weak().end()) {
    const auto it = known_cache().find(of->second);
    if (it != known_cache().end()) forget(it);
  }
  Py_RETURN_NONE;
}

PyObject* drop_known_function() {
  static PyMethodDef def{"drop_known", drop_known, METH_O, nullptr};
  static PyObject* fn = PyCFunction_New(&def, nullptr);  // kept for the process
  return fn;
}

bool same_dtype(const py::dtype& a, const py::dtype& b) {
  return a.ptr() == b.ptr() || PyObject_RichCompareBool(a.ptr(), b.ptr(), Py_EQ) == 1;
}

bool same_memory(const Described& a, const Described& b) {
  return a.ptr == b.ptr && a.nbytes == b.nbytes && a.host == b.host && same_dtype(a.dtype, b.dtype);
}

const Known* known(PyObject* x, const Device& device) {
  KnownCache& cache = known_cache();
  auto it = cache.find(x);
  if (it == cache.end()) return nullptr;
  return it->second.device.impl() == device.impl() ? &it->second : nullptr;
}

void remember(PyObject* x, const Device& device, const Described& what, const Buffer& base) {
  KnownCache& cache = known_cache();
  auto it = cache.find(x);
  if (it != cache.end()) forget(it);
  if (cache.size() >= kMaxKnown) forget_all();
  PyObject* weak = PyWeakref_NewRef(x, drop_known_function());
  if (!weak) {  // no weak references to this type: described and imported each call
    PyErr_Clear();
    return;
  }
  cache.emplace(x, Known{weak, device, what, base});
  object_of_weak().emplace(weak, x);
}

// ---- describing ----

// torch's current stream on GPU `index` as a raw handle (what __dlpack__ orders after):
// torch._C._cuda_getCurrentRawStream where it exists, else torch.cuda.current_stream(index).
std::uintptr_t torch_current_stream(long long index) {
  static PyObject* raw = [] {
    py::object c = py::module_::import("torch").attr("_C");
    return py::hasattr(c, "_cuda_getCurrentRawStream") ? py::object(c.attr("_cuda_getCurrentRawStream")).release().ptr() : nullptr;
  }();  // kept for the process
  if (raw) {
    py::object i = py::reinterpret_steal<py::object>(PyLong_FromLongLong(index));
    PyObject* s = PyObject_CallOneArg(raw, i.ptr());
    if (!s) throw py::error_already_set();
    return as_address(py::reinterpret_steal<py::object>(s));
  }
  return py::module_::import("torch").attr("cuda").attr("current_stream")(index).attr("cuda_stream").cast<std::uintptr_t>();
}

// The views whose memory does not hold what the tensor shows, refused.
void refuse_torch_views(const TensorReads& x, bool complex) {
  const Names& n = names();
  if (!truthy(x.call(&TorchAccessors::is_contiguous, n.is_contiguous))) {
    throw ArgumentError("the Tensor is not C-contiguous; pass a contiguous copy (x.contiguous())");
  }
  // Lazy views: the memory holds the values before negation or conjugation.
  if (truthy(x.call(&TorchAccessors::is_neg, n.is_neg))) throw ArgumentError("the Tensor has its negative bit set (a view); pass x.resolve_neg()");
  if (complex && truthy(x.call(&TorchAccessors::is_conj, n.is_conj))) {
    throw ArgumentError("the Tensor has its conjugate bit set (a view); pass x.resolve_conj()");
  }
}

void refuse_grad(const TensorReads& x) {
  if (truthy(x.attribute(&TorchAccessors::requires_grad, names().requires_grad))) {
    throw ArgumentError("the Tensor requires grad, and autograd would not see what a kernel writes; pass x.detach()");
  }
}

// A torch tensor `device` can use in place: CUDA memory of its GPU, or host memory (any
// device: the CPU reads it, GPUs stage it). nullopt leaves it to DLPack, which says why not
// (another GPU, a dtype NumPy lacks, a sparse or other non-strided tensor: torch raises on one
// of the reads below). `before`: the object's last description on `device`, if any.
std::optional<Described> describe_torch(PyObject* object, const Device& device, ForeignCall& per_call, const Known* before) {
  const Names& n = names();
  const TensorReads x(object);
  try {
    Described d;
    py::object type;
    if (before) {  // the same dtype object: the same device (unless the pointer differs below) and NumPy dtype
      refuse_grad(x);
      type = x.attribute(&TorchAccessors::dtype, n.dtype);
      if (type.ptr() == before->what.token.ptr()) {
        refuse_torch_views(x, before->what.dtype.kind() == 'c');
        d = before->what;
        d.ptr = as_address(x.call(&TorchAccessors::data_ptr, n.data_ptr));
        d.nbytes = static_cast<std::size_t>(as_long(x.attribute(&TorchAccessors::nbytes, n.nbytes)));
        if (d.ptr != before->what.ptr) before = nullptr;  // maybe another device: described in full
      } else {
        before = nullptr;
      }
    }
    if (!before) {
      const long long index = as_long(x.call(&TorchAccessors::get_device, n.get_device));  // -1: host memory
      const bool cuda_device = device.info().backend == "cuda";
      if (index >= 0 && (!cuda_device || index != device.info().index)) return std::nullopt;
      refuse_grad(x);
      type = x.attribute(&TorchAccessors::dtype, n.dtype);
      std::optional<py::dtype> dtype = numpy_dtype_of_torch(type);
      if (!dtype) return std::nullopt;
      refuse_torch_views(x, dtype->kind() == 'c');
      d.ptr = as_address(x.call(&TorchAccessors::data_ptr, n.data_ptr));
      d.nbytes = static_cast<std::size_t>(as_long(x.attribute(&TorchAccessors::nbytes, n.nbytes)));
      d.dtype = std::move(*dtype);
      d.host = index < 0;
      d.index = index;
      d.token = std::move(type);
    }
    if (!d.host) {
      if (!per_call.torch_stream) per_call.torch_stream = torch_current_stream(d.index);
      d.ordered = true;
      d.stream = *per_call.torch_stream;
    }
    return d;
  } catch (py::error_already_set&) {
    return std::nullopt;
  }
}

// A CuPy array on `device`'s GPU: its MemoryPointer, size, dtype and contiguity flag (the
// __cuda_array_interface__ dict costs several times these reads: it formats dtype.descr).
// CuPy's current stream is read once per call; its null stream (0) is the legacy default
// stream, as its interface says (1). nullopt: not one CuPy answers here (the interface then).
std::optional<Described> describe_cupy(PyObject* x, const Device& device, ForeignCall& per_call, const Known* before) {
  const Names& n = names();
  if (device.info().backend != "cuda") return std::nullopt;
  try {
    py::object data = get(x, n.data);
    const bool same_pointer = before && data.ptr() == before->what.token.ptr();
    if (!same_pointer && as_long(get(data.ptr(), n.device_id)) != device.info().index) return std::nullopt;
    py::object type = get(x, n.dtype);
    if (!py::isinstance<py::dtype>(type)) return std::nullopt;
    if (!truthy(get(x, n._c_contiguous))) {
      throw ArgumentError("the ndarray is not C-contiguous; pass cupy.ascontiguousarray(x)");
    }
    Described d;
    d.ptr = same_pointer ? before->what.ptr : as_address(get(data.ptr(), n.ptr));
    d.nbytes = static_cast<std::size_t>(as_long(get(x, n.nbytes)));
    d.dtype = py::reinterpret_borrow<py::dtype>(type);
    d.index = device.info().index;
    d.token = std::move(data);
    if (!per_call.cupy_stream) {
      static PyObject* current =
          py::object(py::module_::import("cupy").attr("cuda").attr("get_current_stream")).release().ptr();
      py::object stream = py::reinterpret_steal<py::object>(PyObject_CallNoArgs(current));  // `current`: kept for the process
      if (!stream) throw py::error_already_set();
      per_call.cupy_stream = as_address(get(stream.ptr(), n.ptr));
    }
    d.ordered = true;
    d.stream = *per_call.cupy_stream;
    return d;
  } catch (py::error_already_set&) {
    return std::nullopt;
  }
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

// An object with __cuda_array_interface__; nullopt when it has none, or when its interface
// names no stream (version 2) and DLPack can order it instead. Read by interned keys from the
// dict, its type's name made only for an error (Numba builds the dict anew each call).
std::optional<Described> describe_cai(const py::handle& x) {
  const Names& n = names();
  PyObject* cai = PyObject_GetAttr(x.ptr(), n.__cuda_array_interface__);
  if (!cai) {
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) throw py::error_already_set();
    PyErr_Clear();
    return std::nullopt;
  }
  const py::object owner = py::reinterpret_steal<py::object>(cai);
  auto what = [&x] { return std::string(py::str(py::type::of(x).attr("__name__"))); };
  if (!PyDict_Check(cai)) throw ArgumentError("the " + what() + "'s __cuda_array_interface__ is not a dict");
  auto item = [cai](PyObject* key) {  // borrowed; null when absent
    PyObject* v = PyDict_GetItemWithError(cai, key);
    if (!v && PyErr_Occurred()) throw py::error_already_set();
    return v;
  };
  PyObject* stream = item(n.stream);
  if (!stream && PyObject_HasAttr(x.ptr(), n.__dlpack__)) return std::nullopt;
  PyObject* mask = item(n.mask);
  if (mask && mask != Py_None) throw ArgumentError("the " + what() + " is a masked array; pass the data alone");
  PyObject* data = item(n.data);
  PyObject* typestr = item(n.typestr);
  PyObject* shape_items = item(n.shape);
  std::vector<long long> shape, strides;
  if (!data || !PyTuple_Check(data) || PyTuple_GET_SIZE(data) != 2 || !typestr || !PyUnicode_Check(typestr) ||
      !shape_items || !read_ints(shape_items, shape)) {
    throw ArgumentError("the " + what() + "'s __cuda_array_interface__ lacks a (pointer, read-only) data tuple, a "
                        "typestr or a shape of ints");
  }
  if (truthy(PyTuple_GET_ITEM(data, 1))) throw ArgumentError("the " + what() + " is read-only, and kernels may write a Buffer; pass a writable copy");
  py::dtype dtype = dtype_of_typestr(typestr);
  if (py::detail::array_descriptor_proxy(dtype.ptr())->byteorder == '>') {
    throw ArgumentError("the " + what() + " is big-endian; kernels read native byte order");
  }
  // C order each call (a view's strides may change under the same pointer and shape).
  PyObject* strides_items = item(n.strides);
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
  Described out;
  out.ptr = as_address(py::handle(PyTuple_GET_ITEM(data, 0)));
  out.nbytes = static_cast<std::size_t>(dtype.itemsize());
  for (auto s : shape) {
    if (s < 0) throw ArgumentError("the " + what() + "'s __cuda_array_interface__ has a negative dimension");
    out.nbytes *= static_cast<std::size_t>(s);
  }
  out.dtype = std::move(dtype);
  if (stream && stream != Py_None) {
    out.ordered = true;
    out.stream = as_address(py::handle(stream));
    if (out.stream == 0) throw ArgumentError("the " + what() + "'s __cuda_array_interface__ has stream 0, which the protocol forbids");
  }
  return out;
}

}  // namespace

bool is_foreign_tensor_type(PyObject* o) {
  // By the type's name first: until torch or CuPy is imported, each look for it is a sys.modules
  // lookup, which every other argument (NumPy arrays, numbers) would pay.
  PyTypeObject* t = Py_TYPE(o);
  const char* dot = std::strrchr(t->tp_name, '.');
  const char* name = dot ? dot + 1 : t->tp_name;
  if (std::strcmp(name, "Tensor") == 0) return reinterpret_cast<PyObject*>(t) == torch_tensor_type();
  if (std::strcmp(name, "ndarray") == 0 && std::strcmp(t->tp_name, "numpy.ndarray") != 0) {
    return reinterpret_cast<PyObject*>(t) == cupy_array_type();
  }
  return false;
}

std::optional<ForeignArgument> foreign_argument(const py::handle& x, const Device& device, ForeignCall& per_call) {
  PyObject* o = x.ptr();
  const Known* before = known(o, device);
  std::optional<Described> what;
  PyObject* torch = torch_tensor_type();
  PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(o));
  bool described_by_type = true;  // torch and CuPy: their entries carry a token; interface objects are parsed each call
  // An exact CuPy array skips the torch test (torch.Tensor's metaclass makes isinstance a lookup and a call).
  const bool exact_cupy = type != torch && type == cupy_array_type();
  if (!exact_cupy && torch && PyObject_IsInstance(o, torch) == 1) {
    what = describe_torch(o, device, per_call, before);
  } else {
    PyObject* cupy = cupy_array_type();
    if (cupy && (exact_cupy || PyObject_IsInstance(o, cupy) == 1)) what = describe_cupy(o, device, per_call, before);
    // Other interface objects (Numba's), and CuPy arrays CuPy did not answer for, on CUDA.
    if (!what && device.info().backend == "cuda") {
      what = describe_cai(x);
      described_by_type = false;
    }
  }
  PyErr_Clear();  // an IsInstance that failed counts as "not one"
  if (!what) return std::nullopt;
  // The entry still holds: its import is reused. Else a new one (the driver checks the pointer).
  const bool same = before && same_memory(before->what, *what) &&
                    (!described_by_type || before->what.token.ptr() == what->token.ptr());
  Buffer base;
  if (same) {
    base = before->base;
  } else {
    if (!what->host) base = device.wrap(reinterpret_cast<void*>(what->ptr), what->nbytes, nullptr);
    remember(o, device, *what, base);
  }
  ForeignArgument out;
  out.dtype = what->dtype;
  out.nbytes = what->nbytes;
  if (what->host) {
    out.host = reinterpret_cast<void*>(what->ptr);
    return out;
  }
  // The producer's queued work on the memory comes first: an event, once per stream and call,
  // unless it is the device's own stream (the host does not wait).
  const std::uintptr_t* waited = per_call.ordered + per_call.ordered_count;
  if (what->ordered && what->stream != device.stream_handle() &&
      std::find(static_cast<const std::uintptr_t*>(per_call.ordered), waited, what->stream) == waited) {
    device.wait_for_stream(what->stream);
    if (per_call.ordered_count < ForeignCall::kOrdered) per_call.ordered[per_call.ordered_count++] = what->stream;
  }
  if (per_call.holder) {  // the call's Completion holds the producer: its cached import as is
    per_call.holder->hold_producer(o, per_call.expected);
    out.buffer = std::move(base);
  } else {
    out.buffer = base.kept_with(keep_producer_alive(o));
  }
  return out;
}

}  // namespace metalcall::python
