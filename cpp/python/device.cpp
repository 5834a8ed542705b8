// metalcall.Device and get_devices().
#include <cstring>

#include "bindings.hpp"

namespace metalcall::python {

namespace {

Device open_device(const py::object& spec, bool checked, bool timing) {
  DeviceOptions options;
  options.checked = checked;
  options.timing = timing;
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

CompileOptions compile_options(const py::object& defines, bool fast_math, const py::object& language_version) {
  CompileOptions options;
  options.fast_math = fast_math;
  if (!language_version.is_none()) options.language_version = py::str(language_version);
  if (defines.is_none()) return options;
  if (py::isinstance<py::dict>(defines)) {
    for (const auto& [k, v] : py::reinterpret_borrow<py::dict>(defines))
      options.defines.emplace_back(py::str(k), define_value(v));
  } else {
    for (const auto& item : py::iter(defines)) {
      if (py::isinstance<py::str>(item)) options.defines.emplace_back(py::str(item), "1");
      else throw ArgumentError("defines is a dict {name: value} or a list of names");
    }
  }
  return options;
}

Library compile(const Device& d, const std::string& source, const py::object& defines, bool fast_math,
                const py::object& language_version) {
  CompileOptions options = compile_options(defines, fast_math, language_version);
  GilRelease release;
  return d.compile(source, options);
}

PyBuffer buffer_from_data(const Device& d, const py::buffer& data) {
  py::buffer_info info = data.request();
  const std::size_t n = static_cast<std::size_t>(info.size * info.itemsize);
  PyBuffer b = make_buffer(d, {static_cast<py::ssize_t>(n)}, py::dtype::of<std::uint8_t>());
  // Non-contiguous data goes through NumPy, which lays it out in C order.
  py::array contiguous = py::module_::import("numpy").attr("ascontiguousarray")(data);
  std::memcpy(b.buffer.data(), contiguous.data(), n);
  return b;
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
)doc")
      .def(py::init(&open_device), py::arg("device") = py::none(), py::kw_only(), py::arg("checked") = false,
           py::arg("timing") = false)
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
      .def_property_readonly("timing", [](const Device& d) { return d.options().timing; })
      .def_property_readonly("info", [](const Device& d) { return d.info(); })
      .def("compile", &compile, py::arg("source"), py::kw_only(), py::arg("defines") = py::none(),
           py::arg("fast_math") = true, py::arg("language_version") = py::none(), R"doc(
Compiles MSL source into a Library. Raises CompileError with the line and column
in your source. ``defines``: {name: value} or [names] as preprocessor macros.
Cached by content: compiling the same source again is free.
)doc")
      .def("kernel", [](const Device& d, const std::string& source) { return compile(d, source, py::none(), true, py::none()); },
           py::arg("source"), "metalcompute's name for compile().")
      .def("load_library", [](const Device& d, const py::object& path_or_bytes) {
        std::string bytes;
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
      .def("empty", [](const Device& d, const py::object& shape, const py::object& dtype) {
        return make_buffer(d, shape_from(shape), py::dtype::from_args(dtype));
      }, py::arg("shape"), py::arg("dtype") = py::module_::import("numpy").attr("float32"),
         "A new buffer of shape and dtype (zero-filled).")
      .def("zeros", [](const Device& d, const py::object& shape, const py::object& dtype) {
        return make_buffer(d, shape_from(shape), py::dtype::from_args(dtype));
      }, py::arg("shape"), py::arg("dtype") = py::module_::import("numpy").attr("float32"),
         "A new zero-filled buffer of shape and dtype.")
      .def("asarray", [](const Device& d, const py::object& data, const py::object& dtype) {
        // A DLPack producer without the buffer protocol (torch, JAX) is shared in place where the device can.
        if (dtype.is_none() && d.info().backend == "cpu" && dlpack_only(data)) return import_dlpack(data, d);
        py::array a = py::module_::import("numpy").attr("ascontiguousarray")(data, dtype);
        std::vector<py::ssize_t> shape(a.shape(), a.shape() + a.ndim());
        PyBuffer b = make_buffer(d, shape, a.dtype());
        std::memcpy(b.buffer.data(), a.data(), static_cast<std::size_t>(a.nbytes()));
        return b;
      }, py::arg("data"), py::arg("dtype") = py::none(),
         "A new buffer holding a copy of array-like data; on the CPU, a DLPack producer without the "
         "buffer protocol (torch, JAX) is shared in place instead (see from_dlpack).")
      .def("synchronize", [](const Device& d) {
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
               (d.options().checked ? " checked" : "") + (d.options().timing ? " timing" : "") + ">";
      });
}

}  // namespace metalcall::python
