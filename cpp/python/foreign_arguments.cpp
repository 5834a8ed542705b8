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
  MC_NAME(__dlpack__) MC_NAME(stream) MC_NAME(shape) MC_NAME(strides) MC_NAME(gpu_data) MC_NAME(is_deleted)
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
  bool read_only = false;     // the owner lets no one write it: const parameters only (Buffer::read_only)
  bool ordered = false;       // the producer named a stream to order after
  std::uintptr_t stream = 0;
  long long index = -1;       // torch: get_device() (-1: host memory)
  py::object token;           // torch: its dtype object; CuPy and Numba: its MemoryPointer (see Known)
  // Numba: the shape, strides, dtype and stream objects its interface was made from (see describe_numba).
  py::object shape, strides, type, stream_object;
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
  return a.ptr == b.ptr && a.nbytes == b.nbytes && a.host == b.host && a.read_only == b.read_only &&
         same_dtype(a.dtype, b.dtype);
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

// An object with __cuda_array_interface__, read from its interface; nullopt when it has none,
// or when its interface names no stream (version 2) and DLPack can order it instead.
std::optional<Described> describe_interface(const py::handle& x) {
  std::optional<CudaArrayView> view = read_cuda_array_interface(x);
  if (!view || (!view->has_stream_key && PyObject_HasAttr(x.ptr(), names().__dlpack__))) return std::nullopt;
  Described out;
  out.ptr = view->ptr;
  out.nbytes = view->nbytes;
  out.dtype = std::move(view->dtype);
  out.read_only = view->read_only;
  out.ordered = view->stream.has_value();
  out.stream = view->stream.value_or(0);
  return out;
}

PyObject* numba_array_type() {
  static PyObject* type = nullptr;
  static PyObject* name = PyUnicode_InternFromString("numba.cuda.cudadrv.devicearray");
  return type_in(name, "DeviceNDArray", &type);
}

bool same_object(const py::object& a, PyObject* b) {
  return a.ptr() == b || (a && PyObject_RichCompareBool(a.ptr(), b, Py_EQ) == 1);
}

// A Numba DeviceNDArray: Numba builds its interface dict in Python each call (about 2 µs), from
// its MemoryPointer (gpu_data, whose address never changes), shape, strides, dtype and stream.
// While those five objects are the ones the last interface was made from, it says the same:
// the last description is used. Else the interface is read, and its parts kept.
std::optional<Described> describe_numba(const py::handle& x, const Known* before) {
  const Names& n = names();
  PyObject* o = x.ptr();
  py::object parts[5];
  PyObject* const attributes[5] = {n.gpu_data, n.shape, n.strides, n.dtype, n.stream};
  for (int i = 0; i < 5; ++i) {
    PyObject* v = PyObject_GetAttr(o, attributes[i]);
    if (!v) {  // not the DeviceNDArray this knows: its interface alone
      PyErr_Clear();
      return describe_interface(x);
    }
    parts[i] = py::reinterpret_steal<py::object>(v);
  }
  if (before && before->what.token.ptr() == parts[0].ptr() && same_object(before->what.shape, parts[1].ptr()) &&
      same_object(before->what.strides, parts[2].ptr()) && same_object(before->what.type, parts[3].ptr()) &&
      before->what.stream_object.ptr() == parts[4].ptr()) {
    return before->what;
  }
  std::optional<Described> d = describe_interface(x);
  if (!d) return d;
  d->token = std::move(parts[0]);
  d->shape = std::move(parts[1]);
  d->strides = std::move(parts[2]);
  d->type = std::move(parts[3]);
  d->stream_object = std::move(parts[4]);
  return d;
}

// The call's use of a producer's GPU memory: the call's Completion holds the producer (the
// Buffer as is), or the Buffer keeps it alive (batches and recordings).
Buffer held_for_the_call(PyObject* o, Buffer buffer, ForeignCall& per_call) {
  if (!per_call.holder) return buffer.kept_with(keep_producer_alive(o));
  per_call.holder->hold_producer(o, per_call.expected);
  return buffer;
}

// A JAX array on `device`'s GPU. JAX arrays are immutable: their memory holds the same values
// at the same address until the array is deleted or donated. The first call imports it by
// DLPack, which orders the device's stream after the computation that makes it (its capsule
// keeps JAX's external reference while that call runs); later calls reuse the address while
// is_deleted() says no, with nothing to order. Read-only: const parameters only. Arrays in
// host memory take their read-only buffer protocol (nullopt).
std::optional<ForeignArgument> jax_argument(const py::handle& x, const Device& device, ForeignCall& per_call,
                                            const Known* before) {
  if (device.info().backend != "cuda") return std::nullopt;
  PyObject* o = x.ptr();
  if (truthy(invoke(o, names().is_deleted))) {
    throw ArgumentError("the JAX array has been deleted or donated; pass a live array");
  }
  if (!before && !dlpack_on_gpu(x)) return std::nullopt;
  ForeignArgument out;
  Buffer buffer;
  if (before) {
    out.dtype = before->what.dtype;
    out.nbytes = before->what.nbytes;
    buffer = before->base;
  } else {
    PyBuffer imported = import_dlpack(x, device);
    Described d;
    d.ptr = reinterpret_cast<std::uintptr_t>(imported.buffer.data());
    d.nbytes = imported.buffer.nbytes();
    d.dtype = imported.dtype;
    d.read_only = true;
    remember(o, device, d, device.wrap(imported.buffer.data(), d.nbytes, nullptr, true));
    out.dtype = std::move(d.dtype);
    out.nbytes = d.nbytes;
    buffer = std::move(imported.buffer);
  }
  out.buffer = held_for_the_call(o, std::move(buffer), per_call);
  return out;
}

}  // namespace

bool is_jax_array(PyObject* o) {
  static PyTypeObject* found = nullptr;  // jaxlib's type, once seen (referenced: kept for the process)
  PyTypeObject* t = Py_TYPE(o);
  if (t == found) return true;
  static const char suffix[] = ".ArrayImpl";
  const char* name = t->tp_name;
  const std::size_t length = std::strlen(name), tail = sizeof(suffix) - 1;
  if (std::strncmp(name, "jaxlib.", 7) != 0 || length <= tail || std::strcmp(name + length - tail, suffix) != 0) return false;
  Py_INCREF(t);
  found = t;
  return true;
}

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
  if (is_jax_array(o)) return jax_argument(x, device, per_call, before);
  std::optional<Described> what;
  PyObject* torch = torch_tensor_type();
  PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(o));
  bool described_by_type = true;  // torch, CuPy, Numba: their entries carry a token; other interfaces are read each call
  // Exact CuPy and Numba arrays skip the torch test (torch.Tensor's metaclass makes isinstance a
  // lookup and a call).
  const bool cuda = device.info().backend == "cuda";
  const bool exact_cupy = type != torch && type == cupy_array_type();
  // (By name first: until Numba is imported, each look for its type is a sys.modules lookup.)
  if (!exact_cupy && cuda && std::strcmp(Py_TYPE(o)->tp_name, "DeviceNDArray") == 0 && type == numba_array_type()) {
    what = describe_numba(x, before);
  } else if (!exact_cupy && torch && PyObject_IsInstance(o, torch) == 1) {
    what = describe_torch(o, device, per_call, before);
  } else {
    PyObject* cupy = cupy_array_type();
    if (cupy && (exact_cupy || PyObject_IsInstance(o, cupy) == 1)) what = describe_cupy(o, device, per_call, before);
    // Other interface objects, and CuPy arrays CuPy did not answer for, on CUDA.
    if (!what && cuda) {
      what = describe_interface(x);
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
    if (!what->host) base = device.wrap(reinterpret_cast<void*>(what->ptr), what->nbytes, nullptr, what->read_only);
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
  out.buffer = held_for_the_call(o, std::move(base), per_call);
  return out;
}

}  // namespace metalcall::python
