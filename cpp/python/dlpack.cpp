// DLPack both ways and __cuda_array_interface__: Buffer.__dlpack__ exports a
// Buffer's memory in place; from_dlpack imports a producer's memory as a Buffer.
#include "bindings.hpp"
#include "dlpack.hpp"

namespace metalcall::python {

using namespace dlpack;

namespace {

constexpr const char* kLegacyName = "dltensor";
constexpr const char* kLegacyUsed = "used_dltensor";
constexpr const char* kVersionedName = "dltensor_versioned";
constexpr const char* kVersionedUsed = "used_dltensor_versioned";

[[noreturn]] void buffer_error(const std::string& message) {
  PyErr_SetString(PyExc_BufferError, message.c_str());
  throw py::error_already_set();
}

// ---- export ----

// Where a Buffer's memory lives, as DLPack names it. Decided by backend name so
// Metal (not built here) takes the same path: its shared storage is host memory.
// CUDA buffers are managed memory: kDLCUDAManaged is exact, but torch rejects it,
// while kDLCUDA (a pointer kernels can use on that GPU) is true too and every
// consumer takes it.
DLDevice device_of(const PyBuffer& b) {
  const DeviceInfo& info = b.device.info();
  if (info.backend == "cuda") return {kDLCUDA, info.index};
  return {kDLCPU, 0};
}

DLDataType dl_type_of(const py::dtype& dtype) {
  const char kind = dtype.kind();
  const auto bits = static_cast<std::uint8_t>(dtype.itemsize() * 8);
  if (dtype.attr("byteorder").cast<std::string>() == ">") buffer_error("DLPack holds native byte order only; this buffer is big-endian");
  switch (kind) {
    case 'i': return {kDLInt, bits, 1};
    case 'u': return {kDLUInt, bits, 1};
    case 'f': return {kDLFloat, bits, 1};
    case 'c': return {kDLComplex, bits, 1};
    case 'b': return {kDLBool, bits, 1};
    default: break;
  }
  buffer_error("DLPack cannot describe dtype " + std::string(py::str(dtype)) + "; view the buffer with np.asarray(buf) instead");
}

// What an exported tensor owns: the Buffer (one reference) and its shape and strides.
struct ExportContext {
  PyObject* owner = nullptr;
  std::vector<std::int64_t> shape, strides;
};

template <class Managed>
void delete_export(Managed* managed) {
  auto* context = static_cast<ExportContext*>(managed->manager_ctx);
  // Consumers may let go on any thread; the Buffer is a Python object (leaked at exit).
  PyGILState_STATE state;
  if (Py_IsInitialized() && ensure_gil_unless_exiting(&state)) {
    Py_XDECREF(context->owner);
    PyGILState_Release(state);
  }
  delete context;
  delete managed;
}

// A capsule no consumer took still owns its tensor.
void legacy_capsule_destructor(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, kLegacyName)) return;
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kLegacyName));
  if (managed && managed->deleter) managed->deleter(managed);
  PyErr_Restore(type, value, traceback);
}

void versioned_capsule_destructor(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, kVersionedName)) return;
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  auto* managed = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, kVersionedName));
  if (managed && managed->deleter) managed->deleter(managed);
  PyErr_Restore(type, value, traceback);
}

void fill_tensor(DLTensor& t, const PyBuffer& b, DLDevice device, ExportContext& context) {
  context.shape.assign(b.shape.begin(), b.shape.end());
  context.strides.resize(b.shape.size());
  std::int64_t stride = 1;
  for (std::size_t i = b.shape.size(); i-- > 0;) {
    context.strides[i] = stride;
    stride *= b.shape[i];
  }
  t.data = b.buffer.data();
  t.device = device;
  t.ndim = static_cast<std::int32_t>(b.shape.size());
  t.dtype = dl_type_of(b.dtype);
  t.shape = context.shape.data();
  t.strides = context.strides.data();
  t.byte_offset = 0;
}

bool wants_versioned(const py::object& max_version) {
  if (max_version.is_none()) return false;
  py::tuple v = py::reinterpret_borrow<py::object>(max_version).cast<py::tuple>();
  if (v.size() < 1) buffer_error("max_version is a (major, minor) tuple");
  return v[0].cast<long long>() >= static_cast<long long>(kMajorVersion);
}

py::object dlpack_export(const py::object& self, const py::object& stream, const py::object& max_version,
                         const py::object& dl_device, const py::object& copy) {
  const PyBuffer& original = self.cast<const PyBuffer&>();
  DLDevice device = device_of(original);
  if (!dl_device.is_none()) {
    auto wanted = dl_device.cast<std::pair<int, int>>();
    // CUDA's managed memory is host-visible: a CPU consumer may read it in place.
    const bool host_view = wanted.first == kDLCPU && original.device.info().backend == "cuda";
    if (host_view && !original.buffer.host_visible()) {
      buffer_error("this buffer is GPU memory imported from another library: the host cannot read it in place; "
                   "copy it with buf.to(mc.Device(\"cpu\")) first");
    }
    if (host_view) device = {kDLCPU, 0};
    else if (wanted.first != device.device_type || wanted.second != device.device_id)
      buffer_error("this buffer lives on DLPack device (" + std::to_string(device.device_type) + ", " +
                   std::to_string(device.device_id) + "); it cannot be exported to (" + std::to_string(wanted.first) +
                   ", " + std::to_string(wanted.second) + ")");
  }
  // metalcall waits for the buffer's pending work before exporting (below), so the
  // memory is ready on any consumer stream: no stream needs to wait on ours.
  if (device.device_type == kDLCPU && !stream.is_none()) buffer_error("stream must be None for a CPU (kDLCPU) export");
  const bool copied = !copy.is_none() && copy.cast<bool>();
  {
    WaitScope interruptible;  // Ctrl-C
    GilRelease release;
    original.buffer.wait_idle();
  }
  py::object owner = self;
  if (copied) {  // a fresh buffer of the same shape, copied as buf.to() does
    PyBuffer c = describe_buffer(original.device, original.device.copy(original.buffer), original.shape, original.dtype);
    owner = py::cast(std::move(c));
  }
  const PyBuffer& b = owner.cast<const PyBuffer&>();
  b.buffer.mark_shared();  // the consumer's work on it is out of our sight: never reuse it from a cache
  const bool versioned = wants_versioned(max_version);
  // A legacy capsule cannot say read-only: the consumer would take the memory as writable.
  if (b.buffer.read_only() && !versioned) {
    buffer_error("this buffer is read-only memory, which a legacy (unversioned) DLPack capsule cannot say; "
                 "ask for max_version=(1, 0) or export a copy (copy=True)");
  }
  auto context = std::make_unique<ExportContext>();
  if (versioned) {
    auto managed = std::make_unique<DLManagedTensorVersioned>();
    managed->version = {kMajorVersion, kMinorVersion};
    managed->flags = (copied ? kFlagIsCopied : 0) | (b.buffer.read_only() ? kFlagReadOnly : 0);
    fill_tensor(managed->dl_tensor, b, device, *context);
    managed->deleter = &delete_export<DLManagedTensorVersioned>;
    context->owner = owner.inc_ref().ptr();
    managed->manager_ctx = context.release();
    PyObject* capsule = PyCapsule_New(managed.get(), kVersionedName, &versioned_capsule_destructor);
    if (!capsule) {
      delete_export(managed.release());
      throw py::error_already_set();
    }
    managed.release();
    return py::reinterpret_steal<py::object>(capsule);
  }
  auto managed = std::make_unique<DLManagedTensor>();
  fill_tensor(managed->dl_tensor, b, device, *context);
  managed->deleter = &delete_export<DLManagedTensor>;
  context->owner = owner.inc_ref().ptr();
  managed->manager_ctx = context.release();
  PyObject* capsule = PyCapsule_New(managed.get(), kLegacyName, &legacy_capsule_destructor);
  if (!capsule) {
    delete_export(managed.release());
    throw py::error_already_set();
  }
  managed.release();
  return py::reinterpret_steal<py::object>(capsule);
}

// __cuda_array_interface__ (v3) of a CUDA buffer; AttributeError elsewhere, so
// hasattr() tells consumers it is not CUDA memory. No "stream" key: the buffer's
// pending work is waited for first, so no consumer needs to synchronise.
py::dict cuda_array_interface(const PyBuffer& b) {
  if (b.device.info().backend != "cuda") {
    throw py::attribute_error("__cuda_array_interface__: this buffer is on " + b.device.info().backend +
                              ", not CUDA; use np.asarray(buf) or __dlpack__");
  }
  {
    WaitScope interruptible;  // Ctrl-C
    GilRelease release;
    b.buffer.wait_idle();
  }
  b.buffer.mark_shared();  // the consumer's work on it is out of our sight: never reuse it from a cache
  py::dict d;
  d["shape"] = py::tuple(py::cast(b.shape));
  d["typestr"] = b.dtype.attr("str");
  d["data"] = py::make_tuple(reinterpret_cast<std::uintptr_t>(b.buffer.data()), b.buffer.read_only());
  d["strides"] = py::none();
  d["version"] = 3;
  return d;
}

// ---- import ----

std::string name_of(const py::handle& x) { return py::str(py::type::of(x).attr("__name__")); }

py::dtype numpy_dtype_of(DLDataType t) {
  if (t.lanes != 1) throw ArgumentError("DLPack vector types (lanes=" + std::to_string(t.lanes) + ") cannot become a Buffer");
  const int bytes = t.bits / 8;
  std::string code;
  switch (t.code) {
    case kDLInt: code = "i"; break;
    case kDLUInt: code = "u"; break;
    case kDLFloat: code = "f"; break;
    case kDLComplex: code = "c"; break;
    case kDLBool: code = "b"; break;
    default: break;
  }
  const bool sized = t.bits % 8 == 0 && (code == "c" ? (bytes == 8 || bytes == 16)
                                         : code == "f" ? (bytes == 2 || bytes == 4 || bytes == 8)
                                         : code == "b" ? bytes == 1
                                                       : (bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8));
  if (code.empty() || !sized) {
    throw ArgumentError("DLPack dtype (code " + std::to_string(t.code) + ", " + std::to_string(t.bits) +
                        " bits) has no NumPy equivalent (bfloat16 and others are not supported); convert it first");
  }
  return py::dtype(code == "b" ? std::string("?") : code + std::to_string(bytes));
}

// The producer's tensor as a Buffer; `owner` frees the producer's tensor when let go.
// `read_only`: the producer lets no one write it (Buffer::read_only).
PyBuffer wrap_tensor(const DLTensor& t, std::shared_ptr<void> owner, const Device& device, bool read_only) {
  const bool gpu = t.device.device_type == kDLCUDA || t.device.device_type == kDLCUDAManaged;
  if (gpu != (device.info().backend == "cuda") || (!gpu && t.device.device_type != kDLCPU && t.device.device_type != kDLCUDAHost)) {
    throw ArgumentError("the DLPack tensor is on device type " + std::to_string(t.device.device_type) +
                        ", which " + device.info().backend + " cannot use in place");
  }
  py::dtype dtype = numpy_dtype_of(t.dtype);
  // The producer's shape is read, not trusted: a negative extent made a Buffer of 2^64 - 4 bytes
  // (a segfault), a product past 64 bits one that wrapped.
  if (t.ndim < 0 || t.ndim > 64 || (t.ndim > 0 && !t.shape)) {
    throw ArgumentError("the DLPack tensor is malformed: ndim " + std::to_string(t.ndim) + (t.shape ? "" : " without a shape"));
  }
  std::vector<py::ssize_t> shape(t.shape, t.shape + t.ndim);
  const std::size_t itemsize = static_cast<std::size_t>(dtype.itemsize());
  std::size_t count = 1;
  bool empty = false;
  for (auto n : shape) {
    if (n < 0) throw ArgumentError("the DLPack tensor is malformed: a negative extent (" + std::to_string(n) + ") in its shape");
    empty = empty || n == 0;
  }
  for (auto n : shape) {
    const auto extent = static_cast<std::size_t>(n);
    if (!empty && count > static_cast<std::size_t>(PTRDIFF_MAX) / itemsize / extent) {
      throw ArgumentError("the DLPack tensor is malformed: its shape holds more bytes than an address space");
    }
    count *= extent;
  }
  if (t.strides && count > 0) {  // C order; dimensions of one may have any stride
    std::int64_t expected = 1;
    for (int i = t.ndim; i-- > 0;) {
      if (t.shape[i] != 1 && t.strides[i] != expected) {
        throw ArgumentError("the DLPack tensor is not C-contiguous; pass a contiguous copy (x.contiguous(), np.ascontiguousarray(x))");
      }
      expected *= t.shape[i];
    }
  }
  void* data = static_cast<char*>(t.data) + t.byte_offset;
  Buffer buffer = device.wrap(data, count * itemsize, std::move(owner), read_only);
  return describe_buffer(device, std::move(buffer), shape, dtype);
}

// Takes a capsule's tensor (renaming the capsule "used_…") and wraps it.
template <class Managed>
PyBuffer take_capsule(PyObject* capsule, const char* name, const char* used, const Device& device, bool read_only) {
  auto* managed = static_cast<Managed*>(PyCapsule_GetPointer(capsule, name));
  if (!managed) throw py::error_already_set();
  if (PyCapsule_SetName(capsule, used) != 0) throw py::error_already_set();
  std::shared_ptr<void> owner(managed, [](void* p) {
    auto* m = static_cast<Managed*>(p);
    PyGILState_STATE state;  // producers' deleters may touch Python objects (leaked at exit)
    if (!m->deleter || !Py_IsInitialized() || !ensure_gil_unless_exiting(&state)) return;
    m->deleter(m);
    PyGILState_Release(state);
  });
  if constexpr (std::is_same_v<Managed, DLManagedTensorVersioned>) {
    if (managed->version.major > kMajorVersion) {
      throw ArgumentError("the DLPack tensor is version " + std::to_string(managed->version.major) +
                          ".x; metalcall reads 1.x");
    }
    read_only = read_only || (managed->flags & kFlagReadOnly) != 0;
  }
  return wrap_tensor(managed->dl_tensor, std::move(owner), device, read_only);
}

}  // namespace

bool dlpack_only(const py::handle& x) {
  return !PyObject_CheckBuffer(x.ptr()) && py::hasattr(x, "__dlpack__") && py::hasattr(x, "__dlpack_device__");
}

namespace {

// A producer's __dlpack_device__(): (device type, device id), each a 32-bit int as DLDevice holds
// them. Read by hand, not cast: pybind11's cast of a malformed answer ("cpu", (1,), (1.0, 0), 2**40)
// raised a RuntimeError naming no one.
std::pair<int, int> dlpack_device(const py::handle& x) {
  py::object where = x.attr("__dlpack_device__")();
  auto refuse = [&] {
    return ArgumentError(name_of(x) + ".__dlpack_device__() returned " + std::string(py::repr(where)).substr(0, 80) +
                         "; DLPack asks for a tuple (device_type, device_id) of two ints");
  };
  if (!PyTuple_Check(where.ptr()) || PyTuple_GET_SIZE(where.ptr()) != 2) throw refuse();
  int out[2];
  for (int i = 0; i < 2; ++i) {
    PyObject* v = PyTuple_GET_ITEM(where.ptr(), i);
    if (PyBool_Check(v) || !PyIndex_Check(v)) throw refuse();  // IntEnum members (torch's) are ints
    long long n = 0;
    try {
      n = index_value(v);
    } catch (const ArgumentError&) {
      throw refuse();
    }
    if (n < INT32_MIN || n > INT32_MAX) throw refuse();
    out[i] = static_cast<int>(n);
  }
  return {out[0], out[1]};
}

}  // namespace

bool dlpack_on_gpu(const py::handle& x) {
  const auto where = dlpack_device(x);
  return where.first == kDLCUDA || where.first == kDLCUDAManaged;
}

// Where the producer's memory is and where it is wanted must agree: a device uses
// memory in place only when it can (the CPU host memory, CUDA its own GPU's memory).
void check_placement(const std::string& what, std::pair<int, int> where, const Device& device) {
  const bool host = where.first == kDLCPU || where.first == kDLCUDAHost;
  const bool gpu = where.first == kDLCUDA || where.first == kDLCUDAManaged;
  const std::string backend = device.info().backend;
  const std::string dl = "DLPack device (" + std::to_string(where.first) + ", " + std::to_string(where.second) + ")";
  if (!host && !gpu) {
    throw ArgumentError("the " + what + " lives on " + dl + ", which metalcall cannot use; copy it to the host first");
  }
  if (gpu && backend != "cuda") {
    throw ArgumentError("the " + what + " lives on cuda:" + std::to_string(where.second) + " (" + dl + "), but a " +
                        backend + " device uses host memory (kDLCPU) only; run the kernel on mc.Device(\"cuda:" +
                        std::to_string(where.second) + "\"), or copy it to the host first (x.cpu())");
  }
  if (gpu && where.second != device.info().index) {
    throw ArgumentError("the " + what + " lives on cuda:" + std::to_string(where.second) + " but the device is cuda:" +
                        std::to_string(device.info().index) + "; use mc.Device(\"cuda:" + std::to_string(where.second) +
                        "\"), or move it first (x.to(\"cuda:" + std::to_string(device.info().index) + "\"))");
  }
  if (host && backend != "cpu") {
    throw ArgumentError("importing host memory (kDLCPU) onto " + backend + " is not implemented yet (its kernels "
                        "cannot use pageable host memory in place); import onto Device(\"cpu\") or copy with "
                        "dev.asarray(np.asarray(x))");
  }
}

PyBuffer import_dlpack(const py::handle& x, const Device& device) {
  if (!py::hasattr(x, "__dlpack__") || !py::hasattr(x, "__dlpack_device__")) {
    throw ArgumentError("from_dlpack takes an object with __dlpack__ and __dlpack_device__ (NumPy, torch, CuPy, JAX), not " +
                        name_of(x));
  }
  const auto where = dlpack_device(x);
  check_placement(name_of(x), where, device);
  // DLPack's stream rule: the producer makes our stream wait for its pending work
  // on the memory (an event), so every kernel we queue after this sees it. None for host memory.
  py::object stream = py::none();
  if (where.first == kDLCUDA || where.first == kDLCUDAManaged) stream = py::int_(device.stream_handle());
  py::object capsule;
  try {
    capsule = x.attr("__dlpack__")(py::arg("stream") = stream,
                                   py::arg("max_version") = py::make_tuple(kMajorVersion, kMinorVersion));
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_TypeError)) throw;  // a producer older than DLPack 1.0 takes no max_version
    capsule = stream.is_none() ? x.attr("__dlpack__")() : x.attr("__dlpack__")(py::arg("stream") = stream);
  }
  PyObject* c = capsule.ptr();
  // JAX arrays are immutable, but JAX's capsules do not say read-only.
  const bool read_only = is_jax_array(x.ptr());
  if (PyCapsule_IsValid(c, kVersionedName)) {
    return take_capsule<DLManagedTensorVersioned>(c, kVersionedName, kVersionedUsed, device, read_only);
  }
  if (PyCapsule_IsValid(c, kLegacyName)) return take_capsule<DLManagedTensor>(c, kLegacyName, kLegacyUsed, device, read_only);
  throw ArgumentError(name_of(x) + ".__dlpack__() returned no unused DLPack capsule");
}

void init_dlpack(py::module_& m) {
  auto cls = py::reinterpret_borrow<py::class_<PyBuffer>>(m.attr("Buffer"));
  cls.def("__dlpack__", &dlpack_export, py::kw_only(), py::arg("stream") = py::none(),
          py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(), py::arg("copy") = py::none(),
          "A DLPack capsule of this buffer's memory, in place (waits for pending work first).");
  cls.def("__dlpack_device__", [](const PyBuffer& b) {
    const DLDevice d = device_of(b);
    return py::make_tuple(d.device_type, d.device_id);
  }, "(device type, device id) as DLPack names them: (1, 0) on the CPU and Metal, (2, index) on CUDA.");
  cls.def_property_readonly("__cuda_array_interface__", &cuda_array_interface,
                            "The CUDA array interface (v3) of a CUDA buffer; AttributeError on other devices.");
  m.def("from_dlpack", [](const py::object& x, const py::object& device) -> py::object {
    Device d;
    if (!device.is_none()) d = device.cast<Device>();
    else if (py::hasattr(x, "__dlpack_device__") && !py::isinstance<PyBuffer>(x) && dlpack_on_gpu(x))
      d = Device::open("cuda:" + std::to_string(dlpack_device(x).second));
    else d = Device::open("cpu");
    if (py::isinstance<PyBuffer>(x)) {
      const PyBuffer& b = x.cast<const PyBuffer&>();
      if (b.device.impl() == d.impl() || device.is_none()) return x;
    }
    return py::cast(import_dlpack(x, d));
  }, py::arg("x"), py::kw_only(), py::arg("device") = py::none(),
        "A Buffer sharing the memory of a DLPack producer (NumPy, torch, CuPy, JAX, …) without a copy: host memory "
        "on the CPU device, CUDA memory on its GPU's device (the default device follows the producer).");
}

}  // namespace metalcall::python
