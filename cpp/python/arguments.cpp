// Python values → Arguments: Buffers, buffer-protocol objects, DLPack tensors and
// CUDA arrays (used in place), Python and NumPy scalars (packed later to the kernel's declared type).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <unordered_map>

#include "bindings.hpp"

namespace metalcall::python {

Py_buffer* HostReferences::add() {
  views_.push_back(std::make_unique<Py_buffer>());
  std::memset(views_.back().get(), 0, sizeof(Py_buffer));
  return views_.back().get();
}

void HostReferences::hold_producer(PyObject* object, std::size_t expected) {
  if (producers_.empty()) producers_.reserve(expected);
  producers_.push_back(py::reinterpret_borrow<py::object>(object));
}

void HostReferences::take(HostReferences& other) {
  for (auto& v : other.views_) views_.push_back(std::move(v));
  for (auto& o : other.objects_) objects_.push_back(std::move(o));
  for (auto& o : other.producers_) producers_.push_back(std::move(o));
  other.views_.clear();
  other.objects_.clear();
  other.producers_.clear();
}

void HostReferences::release() {
  for (auto& v : views_)
    if (v->obj) PyBuffer_Release(v.get());
  views_.clear();
  objects_.clear();
  producers_.clear();
}

namespace {

// Kernels read native data (every platform metalcall runs on is little-endian): these byte
// order marks and dtype byte orders are the other one.
constexpr const char* kForeignOrderMarks = ">!";
constexpr char kForeignDtypeOrder = '>';

// A PEP 3118 format with a foreign byte order mark anywhere (a struct's fields too; field
// names between colons do not count).
bool foreign_order_format(const char* f) {
  for (bool in_name = false; *f; ++f) {
    if (*f == ':') in_name = !in_name;
    else if (!in_name && std::strchr(kForeignOrderMarks, *f)) return true;
  }
  return false;
}

// A NumPy dtype in the other byte order: its own, or a field's or a subarray's (structured
// dtypes report '|' themselves, so NumPy's recursive isnative answers for them).
bool foreign_order_dtype(PyObject* dtype) {
  const auto* d = py::detail::array_descriptor_proxy(dtype);
  if (d->byteorder == kForeignDtypeOrder) return true;
  if (d->kind != 'V') return false;
  PyObject* native = PyObject_GetAttrString(dtype, "isnative");
  if (!native) throw py::error_already_set();
  const bool foreign = native == Py_False;
  Py_DECREF(native);
  return foreign;
}

// The element type of a PEP 3118 format, and whether it is plain bytes.
ScalarType scalar_from_format(const char* format, bool* raw_bytes, bool* big_endian) {
  *raw_bytes = false;
  *big_endian = false;
  if (!format) {
    *raw_bytes = true;  // no format means unsigned bytes
    return ScalarType::u8;
  }
  *big_endian = foreign_order_format(format);
  const char* f = format;
  if (*f == '@' || *f == '=' || *f == '<' || *f == '!' || *f == '>') ++f;
  if (f[0] == '\0' || f[1] != '\0') return ScalarType::unknown;  // structs, arrays: no check
  switch (f[0]) {
    case 'B': case 'c': *raw_bytes = true; return ScalarType::u8;
    case 'b': return ScalarType::i8;
    case '?': return ScalarType::boolean;
    case 'h': return ScalarType::i16;
    case 'H': return ScalarType::u16;
    case 'i': return ScalarType::i32;
    case 'I': return ScalarType::u32;
    case 'l': return sizeof(long) == 8 ? ScalarType::i64 : ScalarType::i32;
    case 'L': return sizeof(long) == 8 ? ScalarType::u64 : ScalarType::u32;
    case 'q': return ScalarType::i64;
    case 'Q': return ScalarType::u64;
    case 'n': return sizeof(Py_ssize_t) == 8 ? ScalarType::i64 : ScalarType::i32;
    case 'N': return sizeof(size_t) == 8 ? ScalarType::u64 : ScalarType::u32;
    case 'e': return ScalarType::f16;
    case 'f': return ScalarType::f32;
    case 'd': return ScalarType::f64;
    default: return ScalarType::unknown;
  }
}

PyObject* numpy_generic() {
  static PyObject* generic = [] {
    py::object np = py::module_::import("numpy");
    return py::object(np.attr("generic")).release().ptr();  // kept for the process
  }();
  return generic;
}

// A Python int past 64 bits as a double rounded to odd (its top 53 bits, the last set if any bit below
// was), which rounds on to float, half or bfloat as the int itself would; past double's range, the
// largest double, which every one of them refuses as out of range.
double wide_int_rounded_to_odd(PyObject* o) {
  const bool negative = PyObject_RichCompareBool(o, py::int_(0).ptr(), Py_LT) == 1;
  py::int_ magnitude = py::reinterpret_steal<py::int_>(PyNumber_Absolute(o));
  if (!magnitude) throw py::error_already_set();
  const std::size_t bits = magnitude.attr("bit_length")().cast<std::size_t>();
  if (bits > 1024) return negative ? -std::numeric_limits<double>::max() : std::numeric_limits<double>::max();
  const std::size_t drop = bits > 53 ? bits - 53 : 0;
  py::int_ shift(drop);
  py::object top = py::reinterpret_steal<py::object>(PyNumber_Rshift(magnitude.ptr(), shift.ptr()));
  if (!top) throw py::error_already_set();
  py::object back = py::reinterpret_steal<py::object>(PyNumber_Lshift(top.ptr(), shift.ptr()));
  if (!back) throw py::error_already_set();
  std::uint64_t kept = top.cast<std::uint64_t>();
  if (!back.equal(magnitude)) kept |= 1u;  // inexact: round to odd
  const double v = std::ldexp(static_cast<double>(kept), static_cast<int>(drop));  // exact: 53 bits at most
  return negative ? -v : v;
}

// A by-value or `constant T&` parameter of float, half or bfloat components (`vector`: of a vector's).
bool floating_scalar(const ParamInfo* p, bool vector = false) {
  return p && (vector ? p->vector_width > 1 : p->vector_width == 1) && p->kind != ParamKind::buffer &&
         (p->scalar == ScalarType::f32 || p->scalar == ScalarType::f16 || p->scalar == ScalarType::bf16);
}

// `kernel`'s parameter `index` is the one the value is for, where known: an int past 64 bits is a value
// a float, half or bfloat holds (2**64 is a float; 10**39 is past its range), refused for the rest.
// (Looked up only then: reflection's parameter list is built per lookup, and calls must stay cheap.)
// `component`: the value is one of a vector's (a tuple's item), for a float, half or bfloat vector.
Argument scalar_argument(PyObject* o, const Kernel* kernel = nullptr, std::size_t index = 0, bool component = false) {
  if (PyBool_Check(o)) return Argument::from_bool(o == Py_True);
  if (PyLong_Check(o)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow == 0) return Argument::from_int(v);
    if (overflow > 0) {
      const unsigned long long u = PyLong_AsUnsignedLongLong(o);
      if (!PyErr_Occurred()) return Argument::from_uint(u);
      PyErr_Clear();
    }
    if (kernel) {
      const auto params = kernel->info().buffer_params();
      if (index < params.size() && floating_scalar(params[index], component))
        return Argument::from_float(wide_int_rounded_to_odd(o));
    }
    const std::string text = py::str(o);  // a short form of a huge number
    throw ArgumentError("integer " + (text.size() <= 24 ? text : text.substr(0, 8) + "... (" + std::to_string(text.size()) + " digits)") +
                        " does not fit in 64 bits");
  }
  if (PyFloat_Check(o)) return Argument::from_float(PyFloat_AS_DOUBLE(o));
  throw ArgumentError("unsupported scalar");
}

// An np.longdouble (x87's 80 bits, or binary128) as a double rounded to odd, which rounds on to
// float, half or bfloat as the long double itself would (scalar_packing.hpp): float(x) rounded twice
// (1 + 2^-24 + 2^-60 became the tie 1 + 2^-24, then 1.0f, not 1 + 2^-23), and a finite value past
// double's range became infinity, packed as such where float's range check refuses it.
double long_double_rounded_to_odd(const py::handle& o) {
  long double v = 0;
  Py_buffer view;
  if (PyObject_GetBuffer(o.ptr(), &view, PyBUF_SIMPLE) != 0) throw py::error_already_set();
  const bool same = view.len == static_cast<Py_ssize_t>(sizeof v);
  if (same) std::memcpy(&v, view.buf, sizeof v);
  PyBuffer_Release(&view);
  if (!same) return o.cast<double>();  // NumPy's long double is not this compiler's
  double d = static_cast<double>(v);
  if (std::isnan(v) || std::isinf(v) || static_cast<long double>(d) == v) return d;
  if (std::isinf(d)) return std::copysign(std::numeric_limits<double>::max(), d);  // finite, out of every range
  if (std::fabs(static_cast<long double>(d)) > std::fabs(v)) d = std::nextafter(d, 0.0);  // toward zero
  std::uint64_t bits;
  std::memcpy(&bits, &d, sizeof d);
  bits |= 1u;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

// A NumPy scalar (np.float32(2), np.uint8(7), …) by value, keeping its kind.
Argument numpy_scalar_argument(const py::handle& o) {
  const char kind = o.attr("dtype").attr("kind").cast<char>();
  switch (kind) {
    case 'b': return Argument::from_bool(o.cast<bool>());
    case 'i': return Argument::from_int(o.cast<long long>());
    case 'u': return Argument::from_uint(o.cast<unsigned long long>());
    case 'f': {
      static PyObject* long_double = [] {  // np.longdouble's type, kept for the process
        return py::object(py::module_::import("numpy").attr("longdouble")).release().ptr();
      }();
      if (PyObject_TypeCheck(o.ptr(), reinterpret_cast<PyTypeObject*>(long_double)))
        return Argument::from_float(long_double_rounded_to_odd(o));
      return Argument::from_float(o.cast<double>());
    }
    // Their buffer protocol gives plain bytes ('B'), which bind anywhere: np.datetime64(5, 's') became
    // a long 5 or two floats. As arrays of them are, they are refused.
    case 'M': case 'm':
      throw ArgumentError("a NumPy " + std::string(py::str(o.attr("dtype"))) + " value has no MSL type; pass "
                          "x.astype(np.int64) (a count of its units) or x.view(np.int64) if that is what you mean");
    default: break;
  }
  return Argument{};  // structured and other scalars: use their bytes
}

// A tuple or list of numbers (Python's or NumPy's scalars) for a vector parameter, one scalar
// Argument a component: core packs each as a scalar of the component type (scalar_packing.cpp)
// and checks the count against the vector's width.
Argument sequence_argument(PyObject* o, const Kernel* kernel, std::size_t index) {
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
  PyObject** items = PySequence_Fast_ITEMS(o);
  std::vector<Argument> values;
  values.reserve(static_cast<std::size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* x = items[i];
    Argument a;
    if (PyBool_Check(x) || PyLong_Check(x) || PyFloat_Check(x)) a = scalar_argument(x, kernel, index, true);
    else if (PyObject_IsInstance(x, numpy_generic())) a = numpy_scalar_argument(py::handle(x));
    if (a.kind == Argument::Kind::bytes)  // not a number: a nested list (a matrix), a string, a structured scalar
      throw ArgumentError("item " + std::to_string(i) + " of the " + std::string(Py_TYPE(o)->tp_name) + " is a " +
                          Py_TYPE(x)->tp_name + ", not a number; a tuple or list binds to a vector parameter "
                          "(float4, uint3, …) only; pass a NumPy array for anything else");
    values.push_back(std::move(a));
  }
  return Argument::from_components(std::move(values));
}

// The element type NumPy's dtype kind and size name.
ScalarType scalar_from_dtype(char kind, py::ssize_t itemsize, bool* raw_bytes) {
  *raw_bytes = itemsize == 1 && kind == 'u';  // uint8 is how Python spells "bytes"
  switch (kind) {
    case 'b': return itemsize == 1 ? ScalarType::boolean : ScalarType::unknown;
    case 'i': return itemsize == 1 ? ScalarType::i8 : itemsize == 2 ? ScalarType::i16 : itemsize == 4 ? ScalarType::i32
                     : itemsize == 8 ? ScalarType::i64 : ScalarType::unknown;
    case 'u': return itemsize == 1 ? ScalarType::u8 : itemsize == 2 ? ScalarType::u16 : itemsize == 4 ? ScalarType::u32
                     : itemsize == 8 ? ScalarType::u64 : ScalarType::unknown;
    case 'f': return itemsize == 2 ? ScalarType::f16 : itemsize == 4 ? ScalarType::f32 : itemsize == 8 ? ScalarType::f64
                     : ScalarType::unknown;
    default: return ScalarType::unknown;  // structured ('V'), complex, …: see foreign_type
  }
}

// The name of a dtype MSL has no scalar for (complex, long double, datetime, str, bytes,
// structured…), empty when it has one: such arrays bind only to struct parameters.
std::string foreign_type(const py::dtype& dtype, ScalarType scalar) {
  if (scalar != ScalarType::unknown) return {};
  // str(dtype) runs NumPy's Python code, ~5 us: four complex64 Buffers made a call 20x dearer
  // than float32 ones. Names are kept per dtype object (a reference held, so that no other dtype
  // takes its address), for the first few dtypes seen (NumPy's builtin dtypes are singletons).
  // Never destroyed (tests/reliability/test_exit_safe_statics.py); the GIL is held here.
  static auto& names = *new std::unordered_map<PyObject*, std::string>();
  const auto hit = names.find(dtype.ptr());
  if (hit != names.end()) return hit->second;
  std::string name = py::str(dtype);
  if (names.size() < 64) names.emplace(dtype.inc_ref().ptr(), name);
  return name;
}

// "kernel 'k' argument 1 'b' (const device float* b)" where the kernel is known, else "argument 1".
std::string argument_name(const Kernel* kernel, std::size_t index) {
  if (!kernel) return "argument " + std::to_string(index);
  const auto params = kernel->info().buffer_params();
  std::string s = "kernel '" + kernel->name() + "' argument " + std::to_string(index);
  if (index < params.size()) {
    const ParamInfo& p = *params[index];
    s += " '" + p.name + "' (" + (p.is_const ? "const " : "") + p.type_name +
         (p.kind == ParamKind::buffer ? "*" : p.kind == ParamKind::reference ? "&" : "") + ")";
  }
  return s;
}

// NumPy arrays are read straight from their struct: the buffer protocol costs
// several times more per argument, and a kernel call must stay cheap.
// `kernel` and `index` name the argument in errors (the name is built only then: calls must stay cheap).
bool numpy_array_argument(PyObject* o, const Kernel* kernel, std::size_t index, std::vector<Argument>& out,
                          HostReferences& refs) {
  const auto& api = py::detail::npy_api::get();
  if (!api.PyArray_Check_(o)) return false;
  const auto* a = py::detail::array_proxy(o);
  if (!(a->flags & py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_)) {
    throw ArgumentError(argument_name(kernel, index) +
                        ": the array is not C-contiguous; pass np.ascontiguousarray(x)");
  }
  const auto dtype = py::reinterpret_borrow<py::dtype>(a->descr);
  const py::ssize_t itemsize = dtype.itemsize();
  std::size_t n = static_cast<std::size_t>(itemsize);
  for (int d = 0; d < a->nd; ++d) n *= static_cast<std::size_t>(a->dimensions[d]);
  const auto* descr = py::detail::array_descriptor_proxy(a->descr);
  bool raw = false;
  ScalarType scalar = scalar_from_dtype(descr->kind, itemsize, &raw);
  const bool writable = (a->flags & py::detail::npy_api::NPY_ARRAY_WRITEABLE_) != 0;
  if (descr->kind == 'O' || (descr->kind == 'V' && dtype.attr("hasobject").cast<bool>())) {
    throw ArgumentError(argument_name(kernel, index) + ": arrays of Python objects cannot go to a kernel");
  }
  (void)refs;  // the caller's argument tuple keeps the array alive during the call
  out.push_back(Argument::from_host(a->data, n, writable, scalar, raw));
  out.back().host_big_endian = foreign_order_dtype(a->descr);
  out.back().host_foreign_type = foreign_type(dtype, scalar);
  out.back().host_itemsize = static_cast<std::size_t>(itemsize);
  return true;
}

}  // namespace

namespace {

// A foreign tensor (torch, CuPy, a __cuda_array_interface__ object) on its fast path; nullopt
// if not one. Errors name the argument.
std::optional<ForeignArgument> fast_foreign(const py::handle& x, std::size_t index, const Device& device, ForeignCall& call) {
  try {
    return foreign_argument(x, device, call);
  } catch (const ArgumentError& e) {
    throw ArgumentError("argument " + std::to_string(index) + ": " + e.what());
  }
}

// Other foreign GPU memory (DLPack producers reporting CUDA) imported onto the kernel's device; nullopt if not one.
std::optional<PyBuffer> gpu_argument(const py::handle& x, std::size_t index, const Device& device) {
  PyObject* o = x.ptr();
  if (PyBytes_Check(o) || PyByteArray_Check(o) || PyMemoryView_Check(o)) return std::nullopt;  // host memory, no lookups
  try {
    return import_gpu_memory(x, device);
  } catch (const ArgumentError& e) {
    throw ArgumentError("argument " + std::to_string(index) + ": " + e.what());
  }
}

}  // namespace

ElementFacts element_facts(const py::dtype& dtype) {
  ElementFacts f;
  f.scalar = scalar_from_dtype(dtype.kind(), dtype.itemsize(), &f.raw_bytes);
  f.foreign_type = foreign_type(dtype, f.scalar);
  f.big_endian = foreign_order_dtype(dtype.ptr());  // dev.asarray keeps a big-endian dtype
  return f;
}

void convert_arguments(PositionalArgs args, std::size_t first, const Device* device, std::vector<Argument>& out,
                       HostReferences& refs, const Kernel* kernel, bool hold_producers) {
  const std::size_t n = args.size;
  out.reserve(n - first);
  ForeignCall foreign;  // producers' streams, read and waited for once per call
  // Only foreign tensors need the device: a kernel call looks it up (a reference count) then.
  std::optional<Device> kernel_device;  // looked up once, for the first foreign tensor
  auto device_of = [&]() -> const Device& {
    if (device) return *device;
    if (!kernel_device) kernel_device = kernel->device();
    return *kernel_device;
  };
  bool foreign_ready = false;
  auto foreign_call = [&]() -> ForeignCall& {
    if (!foreign_ready) {
      foreign_ready = true;
      // A batch or recording outlives this call and must not make its commit wait: its calls'
      // foreign Buffers keep their producers themselves.
      if (hold_producers && !device_of().current_batch()) {
        foreign.holder = &refs;
        foreign.expected = n - first;
      }
    }
    return foreign;
  };
  // The buffer's dtype is checked like a NumPy array's (uint8 is raw bytes).
  auto add_typed = [&out](Buffer buffer, const ElementFacts& facts, py::ssize_t itemsize) {
    Argument& a = out.emplace_back();
    a.kind = Argument::Kind::buffer;
    a.buffer = std::move(buffer);
    a.host_scalar = facts.scalar;
    a.host_raw_bytes = facts.raw_bytes;
    if (!facts.foreign_type.empty()) a.host_foreign_type = facts.foreign_type;
    a.host_itemsize = static_cast<std::size_t>(itemsize);
    a.host_big_endian = facts.big_endian;
  };
  auto add_buffer = [&add_typed](const PyBuffer& b) { add_typed(b.buffer, b.elements, b.itemsize); };
  auto add_foreign = [&](ForeignArgument& f) {
    const py::ssize_t itemsize = f.dtype.itemsize();
    if (f.buffer) {
      add_typed(std::move(f.buffer), element_facts(f.dtype), itemsize);
      return;
    }
    bool raw = false;
    const ScalarType scalar = scalar_from_dtype(f.dtype.kind(), itemsize, &raw);
    out.push_back(Argument::from_host(f.host, f.nbytes, true, scalar, raw));
    out.back().host_foreign_type = foreign_type(f.dtype, scalar);
    out.back().host_itemsize = static_cast<std::size_t>(itemsize);
  };
  for (std::size_t i = first; i < n; ++i) {
    PyObject* o = args.items[i];
    const py::handle arg(o);
    // Buffers first, without pybind11's type lookup: they are the fast kind of argument.
    if (const PyBuffer* b = exact_instance<PyBuffer>(o, g_buffer_type)) {
      add_buffer(*b);
      continue;
    }
    // torch tensors and CuPy arrays next, by exact type (their subclasses come below).
    if (is_foreign_tensor_type(o)) {
      if (std::optional<ForeignArgument> f = fast_foreign(arg, i - first, device_of(), foreign_call())) {
        add_foreign(*f);
        continue;
      }
    }
    if (numpy_array_argument(o, kernel, i - first, out, refs)) continue;
    if (o == Py_None) {  // for a parameter its function constant leaves out (core checks)
      out.push_back(Argument::none());
      continue;
    }
    if (py::isinstance<PyBuffer>(arg)) {  // a subclass
      add_buffer(arg.cast<const PyBuffer&>());
      continue;
    }
    if (PyBool_Check(o) || PyLong_Check(o) || PyFloat_Check(o)) {
      try {
        out.push_back(scalar_argument(o, kernel, i - first));
      } catch (const ArgumentError& e) {
        throw ArgumentError(argument_name(kernel, i - first) + ": " + e.what());
      }
      continue;
    }
    if (PyObject_IsInstance(o, numpy_generic())) {
      Argument a;
      try {
        a = numpy_scalar_argument(arg);
      } catch (const ArgumentError& e) {
        throw ArgumentError(argument_name(kernel, i - first) + ": " + e.what());
      }
      if (a.kind != Argument::Kind::bytes) {
        out.push_back(std::move(a));
        continue;
      }
    }
    if (PyTuple_Check(o) || PyList_Check(o)) {  // a vector's values: `float4 v` takes (1.0, 2.0, 3.0, 4.0)
      try {
        out.push_back(sequence_argument(o, kernel, i - first));
      } catch (const ArgumentError& e) {
        throw ArgumentError(argument_name(kernel, i - first) + ": " + e.what());
      }
      continue;
    }
    // GPU memory in place on the kernel's GPU, ordered after its producer (before the
    // buffer protocol: CuPy arrays have one, which fails).
    if (!PyBytes_Check(o) && !PyByteArray_Check(o) && !PyMemoryView_Check(o) && !is_foreign_tensor_type(o)) {
      if (std::optional<ForeignArgument> f = fast_foreign(arg, i - first, device_of(), foreign_call())) {
        add_foreign(*f);
        continue;
      }
    }
    if (std::optional<PyBuffer> gpu = gpu_argument(arg, i - first, device_of())) {
      add_buffer(*gpu);
      continue;
    }
    if (dlpack_only(arg)) {  // torch, JAX, …: host memory in place, kept alive by refs
      py::object imported = py::cast(import_dlpack(arg, Device::open("cpu")));
      const PyBuffer& b = imported.cast<const PyBuffer&>();
      bool raw = false;
      const ScalarType scalar = scalar_from_dtype(b.dtype.kind(), b.itemsize, &raw);
      out.push_back(Argument::from_host(b.buffer.data(), b.buffer.nbytes(), !b.buffer.read_only(), scalar, raw));
      out.back().host_foreign_type = foreign_type(b.dtype, scalar);
      out.back().host_itemsize = static_cast<std::size_t>(b.itemsize);
      refs.keep(imported.ptr());
      continue;
    }
    // A Texture's texels are a Buffer of its device: bound as that Buffer, so that calls that reach them
    // through a buffer binding and through the texture are one memory to hazard tracking and to the
    // Metal planner (P2.1 item 3), never a host copy of it.
    if (py::isinstance<Texture>(arg)) {
      const Texture& texture = arg.cast<const Texture&>();
      const py::dtype dtype = texel_dtype(texture);
      Argument& a = out.emplace_back();
      a.kind = Argument::Kind::buffer;
      a.buffer = texture.storage();
      a.host_scalar = scalar_from_dtype(dtype.kind(), dtype.itemsize(), &a.host_raw_bytes);
      a.host_foreign_type = foreign_type(dtype, a.host_scalar);
      a.host_itemsize = static_cast<std::size_t>(dtype.itemsize());
      continue;
    }
    if (!PyObject_CheckBuffer(o)) {
      throw ArgumentError(argument_name(kernel, i - first) + ": cannot pass a " +
                          std::string(py::str(py::type::of(arg).attr("__name__"))) +
                          " to a kernel; pass a metalcall Buffer, an object with the buffer protocol "
                          "(NumPy array, array.array, bytearray, memoryview, bytes), a number, or a tuple of numbers for a vector");
    }
    Py_buffer* view = refs.add();
    // Writable if the object allows it, read-only otherwise; C-contiguous always.
    if (PyObject_GetBuffer(o, view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
      PyErr_Clear();
      if (PyObject_GetBuffer(o, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
        PyErr_Clear();
        throw ArgumentError(argument_name(kernel, i - first) +
                            ": the buffer is not C-contiguous; pass np.ascontiguousarray(x)");
      }
    }
    bool raw = false, big_endian = false;
    const ScalarType scalar = scalar_from_format(view->format, &raw, &big_endian);
    out.push_back(Argument::from_host(view->buf, static_cast<std::size_t>(view->len), !view->readonly, scalar, raw));
    out.back().host_big_endian = big_endian;
    // A format no MSL scalar matches ('Zf' complex, 'g' long double, 'w' text, 'T{…}' structs): named as given.
    if (scalar == ScalarType::unknown && !raw) {
      out.back().host_foreign_type = std::string("format '") + view->format + "'";
      out.back().host_itemsize = static_cast<std::size_t>(view->itemsize);
    }
  }
}

Argument constant_value(const py::handle& value) {
  PyObject* o = value.ptr();
  if (PyBool_Check(o) || PyLong_Check(o) || PyFloat_Check(o)) return scalar_argument(o);
  if (PyObject_IsInstance(o, numpy_generic())) {
    Argument a = numpy_scalar_argument(value);
    if (a.kind != Argument::Kind::bytes) return a;
  }
  throw ArgumentError("a function constant takes a bool, int or float, not " +
                      std::string(py::str(py::type::of(value).attr("__name__"))) +
                      " (a vector constant: a tuple, list or 1-D NumPy array of them)");
}

}  // namespace metalcall::python
