// metalcall.Device and get_devices().
#include <cstring>

#include "bindings.hpp"

namespace metalcall::python {

namespace {

// A flag argument: a bool (or NumPy bool), else an ArgumentError naming it.
bool flag(const py::handle& v, const char* what) {
  if (PyBool_Check(v.ptr())) return v.ptr() == Py_True;
  if (py::isinstance(v, py::module_::import("numpy").attr("bool_"))) return v.cast<bool>();
  throw ArgumentError(std::string(what) + " takes True or False, not " + Py_TYPE(v.ptr())->tp_name);
}

// kernel_timeout=: None (no limit) or seconds > 0.
double timeout_seconds(const py::handle& v) {
  if (v.is_none()) return 0;
  if (!PyBool_Check(v.ptr()) && (PyLong_Check(v.ptr()) || PyFloat_Check(v.ptr()) || PyNumber_Check(v.ptr()))) {
    const double seconds = PyFloat_AsDouble(v.ptr());
    if (seconds == -1 && PyErr_Occurred()) throw py::error_already_set();
    if (seconds > 0 && seconds <= 1e9) return seconds;
  }
  throw ArgumentError("Device(kernel_timeout=...) takes None or seconds above 0 (at most 1e9), not " +
                      std::string(py::repr(v)));
}

Device open_device(const py::object& spec, const py::object& checked, const py::object& sandbox,
                   const py::object& timing, const py::object& family, const py::object& kernel_timeout) {
  DeviceOptions options;
  options.checked = flag(checked, "Device(checked=...)");
  if (!sandbox.is_none()) options.sandbox = flag(sandbox, "Device(sandbox=...)") ? SandboxMode::on : SandboxMode::off;
  options.timing = flag(timing, "Device(timing=...)");
  if (!family.is_none()) {
    if (!py::isinstance<py::str>(family))
      throw ArgumentError(std::string("Device(family=...) takes a GPU family name (str), not ") +
                          Py_TYPE(family.ptr())->tp_name);
    options.family = py::str(family);
  }
  options.kernel_timeout = timeout_seconds(kernel_timeout);
  // metalcompute's Device(-1) (any negative index) is the default device, like Device().
  if (!spec.is_none() && PyIndex_Check(spec.ptr()) && !PyBool_Check(spec.ptr())) {
    py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(spec.ptr()));
    if (!index) throw py::error_already_set();
    if (PyObject_RichCompareBool(index.ptr(), py::int_(0).ptr(), Py_LT) == 1) {
      GilRelease release;
      return Device::open("", options);
    }
  }
  if (spec.is_none()) {
    GilRelease release;
    return Device::open("", options);
  }
  if (PyBool_Check(spec.ptr())) throw DeviceError("a device is chosen by index (int) or name (str), not bool");
  if (PyIndex_Check(spec.ptr())) {
    long long wide = 0;
    try {
      wide = index_value(spec);
    } catch (const ArgumentError&) {
      wide = -1;
    }
    if (wide < 0 || wide > 1 << 20) {
      throw DeviceError("device index " + std::string(py::str(spec)) + " is out of range; see metalcall.get_devices()");
    }
    const int index = static_cast<int>(wide);
    GilRelease release;
    return Device::open(index, options);
  }
  if (py::isinstance<py::str>(spec)) {
    const std::string s = py::str(spec);
    GilRelease release;
    return Device::open(s, options);
  }
  throw DeviceError("a device is chosen by index (int) or name (str), e.g. Device(\"cpu\"), Device(\"cuda:1\")");
}

std::string define_value(const py::handle& v) {
  if (v.is_none()) return "";
  if (PyBool_Check(v.ptr())) return v.ptr() == Py_True ? "1" : "0";
  if (PyFloat_Check(v.ptr())) {
    std::string s = py::str(py::repr(v));
    return s.find_first_of(".eEn") == std::string::npos ? s + ".0f" : s + "f";  // a float literal, as MSL reads it
  }
  return py::str(v);
}

}  // namespace

CompileOptions compile_options(const py::object& defines, const py::object& fast_math, const py::object& language_version) {
  CompileOptions options;
  options.fast_math = flag(fast_math, "compile(fast_math=...)");
  if (!language_version.is_none()) {
    if (!py::isinstance<py::str>(language_version)) {
      throw ArgumentError(std::string("compile(language_version=...) takes a str such as \"3.0\", not ") +
                          Py_TYPE(language_version.ptr())->tp_name);
    }
    options.language_version = py::str(language_version);
  }
  if (defines.is_none()) return options;
  const char* usage = "defines is a dict {name: value} (value None, bool, int, float or str) or a list of names";
  if (py::isinstance<py::dict>(defines)) {
    for (const auto& [k, v] : py::reinterpret_borrow<py::dict>(defines)) {
      const bool value_ok = v.is_none() || PyBool_Check(v.ptr()) || PyLong_Check(v.ptr()) || PyFloat_Check(v.ptr()) ||
                            py::isinstance<py::str>(v);
      if (!py::isinstance<py::str>(k) || !value_ok) {
        throw ArgumentError(std::string(usage) + "; got " + Py_TYPE(k.ptr())->tp_name + ": " + Py_TYPE(v.ptr())->tp_name);
      }
      options.defines.emplace_back(py::str(k), define_value(v));
    }
  } else if (PyList_Check(defines.ptr()) || PyTuple_Check(defines.ptr())) {
    for (const auto& item : py::reinterpret_borrow<py::sequence>(defines)) {
      if (py::isinstance<py::str>(item)) options.defines.emplace_back(py::str(item), "1");
      else throw ArgumentError(std::string(usage) + "; the list holds a " + Py_TYPE(item.ptr())->tp_name);
    }
  } else {
    throw ArgumentError(std::string(usage) + ", not a " + Py_TYPE(defines.ptr())->tp_name);
  }
  return options;
}

namespace {

// MSL source as UTF-8: a str, or bytes holding UTF-8 text.
std::string source_text(const py::object& source) {
  if (py::isinstance<py::str>(source)) {
    Py_ssize_t n = 0;
    const char* text = PyUnicode_AsUTF8AndSize(source.ptr(), &n);
    if (!text) {
      PyErr_Clear();
      throw ArgumentError("the kernel source holds characters UTF-8 cannot encode (lone surrogates); MSL source is UTF-8 text");
    }
    return std::string(text, static_cast<std::size_t>(n));
  }
  if (PyBytes_Check(source.ptr()) || PyByteArray_Check(source.ptr())) {
    std::string bytes = PyBytes_Check(source.ptr()) ? std::string(py::bytes(source)) : std::string(PyByteArray_AsString(source.ptr()), PyByteArray_Size(source.ptr()));
    py::object decoded = py::reinterpret_steal<py::object>(PyUnicode_DecodeUTF8(bytes.data(), static_cast<Py_ssize_t>(bytes.size()), "strict"));
    if (!decoded) {
      py::error_already_set e;
      throw ArgumentError("the kernel source is not UTF-8 text (" + std::string(py::str(e.value())) +
                          "); decode it to str first, e.g. source.decode('latin-1')");
    }
    return bytes;
  }
  throw ArgumentError(std::string("the kernel source must be a str (or UTF-8 bytes), not ") + Py_TYPE(source.ptr())->tp_name);
}

Library compile_text(const Device& d, const py::object& source_object, const py::object& defines,
                     const py::object& fast_math, const py::object& language_version) {
  const std::string source = source_text(source_object);
  CompileOptions options = compile_options(defines, fast_math, language_version);
  Library library = [&] {
    GilRelease release;
    WaitScope interruptible;  // Ctrl-C during the front end's walks of a long source
    return d.compile(source, options);
  }();
  give_warnings();  // a full cache folder (metalcall/warnings.hpp)
  return library;
}

// The libraries of the str objects compiled last, found by the object itself before its text is
// hashed (the core's cache is keyed by content: hashing a 28 KB source costs microseconds), so
// compiling a source again costs a lookup. An entry holds its str, so the object cannot die and
// its address be reused by another; a str never changes. Only calls without defines or a
// language version are remembered (the common repeat); the GIL guards the table.
struct CompileMemo {
  struct Entry {
    py::object source;  // the str (kept alive), compared by identity
    Device device;
    bool fast_math = true;
    py::object library;  // the Library object returned, returned again
  };
  static constexpr std::size_t kEntries = 64;
  Entry entries[kEntries];
  std::size_t next = 0;  // the slot the next new entry replaces (round robin)
  std::size_t last = 0;  // the slot found or filled last: checked first
};

CompileMemo& compile_memo() {
  static auto& memo = *new CompileMemo;  // never destroyed: it holds Python objects
  return memo;
}

// A new Library object keeps how it was made, for pickling (metalcall/_pickling.py reads it):
// (device, source, defines, fast_math, language_version) as the attribute below.
constexpr const char* kRecipe = "_metalcall_recipe";

py::object new_library(const Device& d, const py::object& source_object, const py::object& defines,
                       const py::object& fast_math, const py::object& language_version) {
  py::object library = py::cast(compile_text(d, source_object, defines, fast_math, language_version));
  library.attr(kRecipe) = py::make_tuple(d, source_object, defines, fast_math, language_version);
  return library;
}

py::object compile(const Device& d, const py::object& source_object, const py::object& defines, const py::object& fast_math,
                   const py::object& language_version) {
  const bool memoizable = PyUnicode_CheckExact(source_object.ptr()) && defines.is_none() && language_version.is_none() &&
                          PyBool_Check(fast_math.ptr());
  if (!memoizable) return new_library(d, source_object, defines, fast_math, language_version);
  const bool fast = fast_math.ptr() == Py_True;
  CompileMemo& memo = compile_memo();
  auto matches = [&](const CompileMemo::Entry& e) {
    return e.source.ptr() == source_object.ptr() && e.fast_math == fast && e.device.impl() == d.impl();
  };
  if (matches(memo.entries[memo.last])) return memo.entries[memo.last].library;
  for (std::size_t i = 0; i < CompileMemo::kEntries; ++i) {
    if (matches(memo.entries[i])) {
      memo.last = i;
      return memo.entries[i].library;
    }
  }
  // Another str of a remembered text (read from a file again, built by a format): compared
  // character by character, about a microsecond for 28 KB where hashing it for the content cache
  // took several. The entry takes the new object, so that its next call is found by identity.
  PyObject* text = source_object.ptr();
  const Py_ssize_t length = PyUnicode_GET_LENGTH(text);
  const int kind = PyUnicode_KIND(text);
  for (std::size_t i = 0; i < CompileMemo::kEntries; ++i) {
    CompileMemo::Entry& e = memo.entries[i];
    PyObject* other = e.source.ptr();
    if (!other || e.fast_math != fast || e.device.impl() != d.impl() || PyUnicode_GET_LENGTH(other) != length ||
        PyUnicode_KIND(other) != kind ||
        std::memcmp(PyUnicode_DATA(other), PyUnicode_DATA(text), static_cast<std::size_t>(length) * kind) != 0)
      continue;
    e.source = source_object;
    memo.last = i;
    return e.library;
  }
  py::object library = new_library(d, source_object, defines, fast_math, language_version);
  CompileMemo::Entry& slot = memo.entries[memo.next];
  slot = CompileMemo::Entry{source_object, d, fast, library};
  memo.last = memo.next;
  memo.next = (memo.next + 1) % CompileMemo::kEntries;
  return library;
}

// Device.compile as the type's own METH_FASTCALL method: a repeated dev.compile(src) costs the
// memo's lookup, not pybind11's argument processing (about a microsecond). Keywords and other
// spellings go to the pybind11 overload (g_compile_overload, the function pybind11 made).
PyTypeObject* g_device_type = nullptr;
PyObject* g_compile_overload = nullptr;  // Device._compile, kept for the process

PyObject* device_compile_fast(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  try {
    const Device* d = exact_instance<Device>(self, g_device_type);
    if (d && nargs == 1 && !kwnames && PyUnicode_CheckExact(args[0])) {
      CompileMemo& memo = compile_memo();
      const CompileMemo::Entry& last = memo.entries[memo.last];
      if (last.source.ptr() == args[0] && last.fast_math && last.device.impl() == d->impl())
        return py::object(last.library).release().ptr();
      return compile(*d, py::reinterpret_borrow<py::object>(args[0]), py::none(), py::bool_(true), py::none())
          .release()
          .ptr();
    }
  } catch (py::error_already_set& e) {
    e.restore();
    return nullptr;
  } catch (...) {
    py::detail::try_translate_exceptions();
    return nullptr;
  }
  // A keyword compile() does not take, or a second positional argument, is bad input: an ArgumentError
  // (a TypeError too) saying what it takes, where pybind11's overload answered "incompatible function
  // arguments" with its signature. constants= belongs to lib.function, the most likely mix-up.
  std::string refused;
  if (nargs > 1) refused = "compile() takes the source as its one positional argument; options are keywords";
  for (Py_ssize_t i = 0; kwnames && refused.empty() && i < PyTuple_GET_SIZE(kwnames); ++i) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, i);
    bool known = false;
    for (const char* name : {"source", "defines", "fast_math", "language_version"})
      known = known || PyUnicode_CompareWithASCIIString(key, name) == 0;
    if (known) continue;
    refused = "compile() has no option '" + std::string(py::str(key)) + "'; it takes defines=, fast_math= and language_version=";
    if (PyUnicode_CompareWithASCIIString(key, "constants") == 0)
      refused += " (function constants are given per kernel: lib.function(name, constants={...}))";
  }
  if (!refused.empty()) {
    try {
      throw ArgumentError(refused);
    } catch (...) {
      py::detail::try_translate_exceptions();
      return nullptr;
    }
  }
  // Everything else (keywords, a subclass): the pybind11 overload, with self first.
  std::vector<PyObject*> all(static_cast<std::size_t>(nargs) + 1 + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0));
  all[0] = self;
  for (std::size_t i = 1; i < all.size(); ++i) all[i] = args[i - 1];
  return PyObject_Vectorcall(g_compile_overload, all.data(), static_cast<std::size_t>(nargs) + 1, kwnames);
}

PyMethodDef g_compile_method = {
    "compile", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(device_compile_fast)),
    METH_FASTCALL | METH_KEYWORDS,
    "compile($self, source, /, *, defines=None, fast_math=True, language_version=None)\n--\n\n"
    "Compiles MSL source into a Library. Raises CompileError with the line and column\n"
    "in your source. ``defines``: {name: value} or [names] as preprocessor macros.\n"
    "Cached by content: compiling the same source again is free (the same str object: the same Library)."};

PyBuffer buffer_from_data(const Device& d, const py::buffer& data) {
  py::buffer_info info = data.request();
  const std::size_t n = static_cast<std::size_t>(info.size * info.itemsize);
  // Non-contiguous data goes through NumPy, which lays it out in C order.
  py::array contiguous = py::module_::import("numpy").attr("ascontiguousarray")(data);
  // Python objects' bytes are their addresses (and hold no reference): as kernel arguments and dtypes refuse them.
  if (contiguous.dtype().attr("hasobject").cast<bool>()) throw ArgumentError("dev.buffer cannot copy Python objects (dtype=object)");
  PyBuffer b = make_buffer(d, {static_cast<py::ssize_t>(n)}, py::dtype::of<std::uint8_t>(), false);
  {
    GilRelease release;  // the array stays alive in `contiguous`
    b.buffer.copy_from_host(contiguous.data(), n);
  }
  return b;
}

// NumPy's dtype for `dtype`; what NumPy cannot read is an ArgumentError.
py::dtype dtype_of(const py::object& dtype) {
  try {
    return py::dtype::from_args(dtype);
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_TypeError) && !e.matches(PyExc_ValueError)) throw;
    throw ArgumentError("dtype " + std::string(py::str(py::repr(dtype))).substr(0, 80) + " is not a NumPy dtype: " +
                        std::string(py::str(e.value())).substr(0, 200));
  }
}

py::dict info_dict(const DeviceInfo& i) {
  py::dict d;
  d["name"] = i.name;
  d["backend"] = i.backend;
  d["index"] = i.index;
  d["architecture"] = i.architecture;
  d["max_threads_per_threadgroup"] = i.max_threads_per_threadgroup;
  d["simd_width"] = i.simd_width;
  d["unified_memory"] = i.unified_memory;
  d["memory_size"] = i.memory_size;
  d["max_buffer_length"] = i.max_buffer_length;
  d["threadgroup_memory_length"] = i.threadgroup_memory_length;
  return d;
}

}  // namespace

void init_device(py::module_& m) {
  py::class_<DeviceInfo>(m, "DeviceInfo", "What a device is, as get_devices() lists it.")
      .def_readonly("name", &DeviceInfo::name)
      .def_readonly("backend", &DeviceInfo::backend)
      .def_readonly("index", &DeviceInfo::index)
      .def_readonly("architecture", &DeviceInfo::architecture)
      .def_readonly("max_threads_per_threadgroup", &DeviceInfo::max_threads_per_threadgroup)
      .def_readonly("simd_width", &DeviceInfo::simd_width)
      .def_readonly("unified_memory", &DeviceInfo::unified_memory)
      .def_readonly("memory_size", &DeviceInfo::memory_size)
      .def_readonly("max_buffer_length", &DeviceInfo::max_buffer_length)
      .def_readonly("threadgroup_memory_length", &DeviceInfo::threadgroup_memory_length)
      .def("as_dict", &info_dict)
      .def("__repr__", [](const DeviceInfo& i) {
        return "<metalcall.DeviceInfo " + i.backend + ":" + std::to_string(i.index) + " '" + i.name + "'>";
      });

  m.def("get_devices", [] { return Device::list(); }, "Every device of every backend built in, best first.");
  m.def("backends", [] { return Device::backends(); }, "The backends built into this metalcall.");

  py::class_<Device>(m, "Device", R"doc(
A device to run kernels on. ``Device()`` picks the best one (Metal on a Mac,
else CUDA, else the CPU; or $METALCALL_DEVICE); ``Device("cpu")``,
``Device("cuda:1")``, ``Device("metal")``, ``Device(index)`` or a device name.
``Device("metal-sim", family="apple7")`` is the Metal simulator (docs/metal-backend.md).
``checked=True`` (CPU): every buffer access is bounds-checked. ``sandbox=True``
(CPU, Linux): kernels are loaded and run in a worker process under a system
call filter, for kernel source you do not trust; the default is on for checked
devices where the sandbox exists, off otherwise (docs/security.md).
)doc")
      .def(py::init(&open_device), py::arg("device") = py::none(), py::kw_only(), py::arg("checked") = false,
           py::arg("sandbox") = py::none(), py::arg("timing") = false, py::arg("family") = py::none(),
           py::arg("kernel_timeout") = py::none())
      .def("__str__", [](const Device& d) { return "metalcall.Device(" + d.info().name + ")"; })
      .def_property_readonly("name", [](const Device& d) { return d.info().name; })
      .def_property_readonly("backend", [](const Device& d) { return d.info().backend; })
      .def_property_readonly("index", [](const Device& d) { return d.info().index; })
      .def_property_readonly("architecture", [](const Device& d) { return d.info().architecture; })
      .def_property_readonly("max_threads_per_threadgroup", [](const Device& d) { return d.info().max_threads_per_threadgroup; })
      .def_property_readonly("simd_width", [](const Device& d) { return d.info().simd_width; })
      .def_property_readonly("unified_memory", [](const Device& d) { return d.info().unified_memory; })
      .def_property_readonly("memory_size", [](const Device& d) { return d.info().memory_size; })
      .def_property_readonly("max_buffer_length", [](const Device& d) { return d.info().max_buffer_length; })
      .def_property_readonly("threadgroup_memory_length", [](const Device& d) { return d.info().threadgroup_memory_length; })
      .def_property_readonly("checked", [](const Device& d) { return d.options().checked; })
      .def_property_readonly("sandbox", [](const Device& d) { return d.options().sandbox == SandboxMode::on; })
      .def_property_readonly("timing", [](const Device& d) { return d.options().timing; })
      .def_property_readonly("kernel_timeout", [](const Device& d) {
        const double t = d.options().kernel_timeout;
        return t > 0 ? py::object(py::float_(t)) : py::object(py::none());
      }, "Seconds a single dispatch may run before it is stopped (ExecutionError), or None: no limit.")
      .def_property_readonly("stream_handle", [](const Device& d) { return d.stream_handle(); },
                             "The CUDA stream this device queues its work on, as an int (0 on other backends). "
                             "torch.cuda.ExternalStream(dev.stream_handle) (CuPy: cupy.cuda.ExternalStream) puts "
                             "their work on it: their tensors then pass to kernels without an ordering event.")
      .def_property_readonly("info", [](const Device& d) { return d.info(); })
      .def("compile", &compile, py::arg("source"), py::kw_only(), py::arg("defines") = py::none(),
           py::arg("fast_math") = py::bool_(true), py::arg("language_version") = py::none(), R"doc(
Compiles MSL source into a Library. Raises CompileError with the line and column
in your source. ``defines``: {name: value} or [names] as preprocessor macros.
Cached by content: compiling the same source again is free.
)doc")
      .def("kernel", [](const Device& d, const py::object& source) { return compile(d, source, py::none(), py::bool_(true), py::none()); },
           py::arg("source"), "metalcompute's name for compile().")
      .def("load_library", [](const Device& d, const py::object& path_or_bytes) {
        std::string bytes;
        const bool path = py::isinstance<py::str>(path_or_bytes) || py::hasattr(path_or_bytes, "__fspath__");
        if (!path && !py::isinstance<py::bytes>(path_or_bytes)) {
          throw ArgumentError(std::string("load_library takes a path (str or os.PathLike) or the library's bytes, not ") +
                              Py_TYPE(path_or_bytes.ptr())->tp_name);
        }
        if (py::isinstance<py::bytes>(path_or_bytes)) bytes = py::bytes(path_or_bytes);
        else bytes = py::module_::import("pathlib").attr("Path")(path_or_bytes).attr("read_bytes")().cast<std::string>();
        std::vector<std::uint8_t> data(bytes.begin(), bytes.end());
        GilRelease release;
        return d.load_library(data);
      }, py::arg("path_or_bytes"), "Loads a compiled .metallib (Metal only).")
      .def("buffer", [](const Device& d, const py::object& size_or_data) -> PyBuffer {
        if (PyIndex_Check(size_or_data.ptr()) && !PyBool_Check(size_or_data.ptr()) && !py::isinstance<py::array>(size_or_data)) {
          const long long n = index_value(size_or_data);
          if (n < 0) throw ArgumentError("a buffer size cannot be negative");
          return make_buffer(d, {static_cast<py::ssize_t>(n)}, py::dtype::of<std::uint8_t>());
        }
        if (!PyObject_CheckBuffer(size_or_data.ptr())) {
          throw ArgumentError("dev.buffer takes a size in bytes or an object with the buffer protocol");
        }
        return buffer_from_data(d, py::reinterpret_borrow<py::buffer>(size_or_data));
      }, py::arg("size_or_data"), "A byte buffer: zero-filled of a size, or a copy of data (metalcompute's dev.buffer).")
      .def("empty", [](const Device& d, const py::object& shape, const py::object& dtype, const py::object& uninitialized) {
        return make_buffer(d, shape_from(shape), dtype_of(dtype), !flag(uninitialized, "empty(uninitialized=...)"));
      }, py::arg("shape"), py::arg("dtype") = py::module_::import("numpy").attr("float32"), py::kw_only(),
         py::arg("uninitialized") = false,
         "A new buffer of shape and dtype (zero-filled; ``uninitialized=True``: contents undefined, "
         "for a result a kernel overwrites entirely).")
      .def("_empty", [](const Device& d, const py::object& shape, const py::object& dtype) {
        return make_buffer(d, shape_from(shape), dtype_of(dtype), false);
      }, "empty(shape, dtype, uninitialized=True) without keyword parsing (half its time): metalcall.numpy's "
         "result buffers.")
      .def("zeros", [](const Device& d, const py::object& shape, const py::object& dtype) {
        return make_buffer(d, shape_from(shape), dtype_of(dtype));
      }, py::arg("shape"), py::arg("dtype") = py::module_::import("numpy").attr("float32"),
         "A new zero-filled buffer of shape and dtype.")
      .def("asarray", [](const Device& d, const py::object& data, const py::object& dtype) {
        // A DLPack producer without the buffer protocol (torch, JAX) is shared in place where the device can.
        if (dtype.is_none() && d.info().backend == "cpu" && dlpack_only(data)) return import_dlpack(data, d);
        // GPU memory (a torch/CuPy CUDA tensor, __cuda_array_interface__) in place on its own GPU.
        if (dtype.is_none()) {
          if (std::optional<PyBuffer> gpu = import_gpu_memory(data, d)) return *gpu;
        }
        if (!dtype.is_none()) dtype_of(dtype);  // an ArgumentError for what NumPy cannot read as a dtype
        py::array a;
        try {
          a = py::module_::import("numpy").attr("ascontiguousarray")(data, dtype);
        } catch (py::error_already_set& e) {
          // NumPy's refusals of the data ([[1, 2], [3]], 300 as uint8, NaN as int32) are bad input: an ArgumentError.
          if (!e.matches(PyExc_TypeError) && !e.matches(PyExc_ValueError) && !e.matches(PyExc_OverflowError)) throw;
          throw ArgumentError("dev.asarray: NumPy cannot make an array of this " + std::string(Py_TYPE(data.ptr())->tp_name) +
                              (dtype.is_none() ? "" : " as " + std::string(py::str(dtype_of(dtype)))) + ": " +
                              std::string(py::str(e.value())).substr(0, 200));
        }
        if (a.dtype().attr("hasobject").cast<bool>()) {
          throw ArgumentError("dev.asarray: NumPy reads this " + std::string(Py_TYPE(data.ptr())->tp_name) +
                              " as Python objects (dtype=object), which a buffer cannot hold; pass numbers, an array "
                              "or an object with the buffer protocol");
        }
        std::vector<py::ssize_t> shape(a.shape(), a.shape() + a.ndim());
        PyBuffer b = make_buffer(d, shape, a.dtype(), false);  // every byte is copied in
        {
          GilRelease release;  // the array stays alive in `a`
          b.buffer.copy_from_host(a.data(), static_cast<std::size_t>(a.nbytes()));
        }
        return b;
      }, py::arg("data"), py::arg("dtype") = py::none(),
         "A new buffer holding a copy of array-like data; on the CPU, a DLPack producer without the "
         "buffer protocol (torch, JAX) is shared in place instead, and on CUDA a CUDA tensor of that GPU "
         "(DLPack or __cuda_array_interface__) is (see from_dlpack).")
      .def("memory_info", [](const Device& d) {
        MemoryInfo info;
        {
          GilRelease release;
          info = d.memory_info();
        }
        py::dict out;
        out["in_use"] = info.in_use;
        out["cached"] = info.cached;
        out["device_free"] = info.device_free;
        out["device_total"] = info.device_total;
        return out;
      }, "Bytes of live Buffers ('in_use'), of freed ones kept for reuse ('cached'), and the device's "
         "free and total memory ('device_free', 'device_total').")
      .def("empty_cache", [](const Device& d) {
        GilRelease release;
        d.empty_cache();
      }, "Frees the memory kept for reuse from freed Buffers (Buffers in use are untouched).")
      .def("synchronize", [](const Device& d) {
        DeferReleases defer;      // the producers the wait finds done, released with the GIL back
        WaitScope interruptible;  // Ctrl-C
        GilRelease release;
        d.synchronize();
      }, "Waits for all work submitted to this device.")
      .def("batch", [](const Device& d) { return std::make_unique<PyBatch>(d); },
           "``with dev.batch():`` submits the calls inside as one command buffer / submission.")
      .def("record", [](const Device& d) { return std::make_unique<PyRecording>(d); },
           "``with dev.record() as g:`` records the calls inside without running them; ``g.replay()`` "
           "runs them again, as one submission, as often as wanted.")
      .def("__eq__", [](const Device& a, const Device& b) { return a.impl() == b.impl(); }, py::is_operator())
      .def("__hash__", [](const Device& d) { return std::hash<const void*>()(d.impl().get()); })
      .def("__repr__", [](const Device& d) {
        return "<metalcall.Device " + d.info().backend + ":" + std::to_string(d.info().index) + " '" + d.info().name + "'" +
               (d.options().checked ? " checked" : "") + (d.options().sandbox == SandboxMode::on ? " sandbox" : "") +
               (d.options().timing ? " timing" : "") +
               (d.options().kernel_timeout > 0 ? " kernel_timeout=" + std::string(py::str(py::float_(d.options().kernel_timeout))) : "") +
               ">";
      });
  // dev.compile: the fast entry above, falling back to the pybind11 overload (kept here only).
  py::object device_class = m.attr("Device");
  g_device_type = reinterpret_cast<PyTypeObject*>(device_class.ptr());
  g_compile_overload = py::object(device_class.attr("compile")).release().ptr();
  PyObject* descr = PyDescr_NewMethod(g_device_type, &g_compile_method);
  if (!descr) throw py::error_already_set();
  device_class.attr("compile") = py::reinterpret_steal<py::object>(descr);
}

}  // namespace metalcall::python
