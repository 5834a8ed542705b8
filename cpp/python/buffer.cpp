// metalcall.Buffer: device memory with the buffer protocol (zero-copy NumPy views).
#include <cstring>
#include <unordered_map>

#include "bindings.hpp"

namespace metalcall::python {

long long index_value(const py::handle& h) {
  py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(h.ptr()));
  if (!index) {
    if (!PyErr_ExceptionMatches(PyExc_TypeError) && !PyErr_ExceptionMatches(PyExc_ValueError)) throw py::error_already_set();
    PyErr_Clear();
    throw ArgumentError("an int was expected, not " + std::string(Py_TYPE(h.ptr())->tp_name));
  }
  int overflow = 0;
  const long long n = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow) throw ArgumentError("integer " + std::string(py::str(h)) + " is out of range");
  return n;
}

std::vector<py::ssize_t> shape_from(const py::handle& shape) {
  std::vector<py::ssize_t> out;
  auto add = [&](const py::handle& h) {
    if (PyBool_Check(h.ptr()) || !PyIndex_Check(h.ptr())) throw ArgumentError("a shape holds integers, got " + std::string(py::str(py::type::of(h))));
    const long long n = index_value(h);
    if (n < 0) throw ArgumentError("shape dimensions cannot be negative, got " + std::to_string(n));
    out.push_back(static_cast<py::ssize_t>(n));
  };
  if (PyIndex_Check(shape.ptr()) && !PyBool_Check(shape.ptr())) add(shape);
  else if (PyTuple_Check(shape.ptr()) || PyList_Check(shape.ptr())) for (const auto& h : py::reinterpret_borrow<py::sequence>(shape)) add(h);
  else throw ArgumentError("a shape is an int or a tuple of ints, not " + std::string(Py_TYPE(shape.ptr())->tp_name));
  if (out.size() > 32) throw ArgumentError("at most 32 dimensions");
  return out;
}

namespace {

// What a buffer needs of a dtype that only NumPy's Python layer answers (~2 µs a dtype: a
// probe array for the format, an attribute for hasobject), kept per dtype object for the first
// few dtypes seen (NumPy's builtin dtypes are singletons; a reference is held, so that no other
// dtype takes the address). Allocations (metalcall.numpy makes one or two per operation) then
// cost a lookup. Never destroyed (tests/reliability/test_exit_safe_statics.py); the GIL guards it.
struct DtypeFacts {
  std::string format;  // the PEP 3118 format NumPy itself gives this dtype
  bool has_object;
};

DtypeFacts facts_of(const py::dtype& dtype) {
  static auto& known = *new std::unordered_map<PyObject*, DtypeFacts>();
  const auto hit = known.find(dtype.ptr());
  if (hit != known.end()) return hit->second;
  DtypeFacts f;
  f.has_object = dtype.attr("hasobject").cast<bool>();
  // Two elements: NumPy describes packed structs with their real layout only then.
  py::array probe(dtype, std::vector<py::ssize_t>{2});
  f.format = probe.request().format;
  if (known.size() < 64) known.emplace(dtype.inc_ref().ptr(), f);
  return f;
}

}  // namespace

PyBuffer make_buffer(const Device& device, const std::vector<py::ssize_t>& shape, const py::dtype& dtype, bool zeroed) {
  // Buffers are shared through the buffer protocol, which has no format for datetime64/timedelta64.
  const char kind = dtype.kind();
  if (kind == 'M' || kind == 'm') {
    throw ArgumentError("buffers cannot hold " + std::string(py::str(dtype)) +
                        " (the buffer protocol has no format for it); store .view(np.int64) instead");
  }
  if (dtype.itemsize() == 0) throw ArgumentError("dtype " + std::string(py::str(dtype)) + " has no size");
  if (facts_of(dtype).has_object) throw ArgumentError("buffers cannot hold Python objects (dtype=object)");
  std::size_t count = 1;
  for (auto n : shape) {
    if (n && count > (static_cast<std::size_t>(-1) / static_cast<std::size_t>(n))) throw ArgumentError("buffer size overflows");
    count *= static_cast<std::size_t>(n);
  }
  const std::size_t item = static_cast<std::size_t>(dtype.itemsize());
  if (count && item > static_cast<std::size_t>(-1) / count) throw ArgumentError("buffer size overflows");
  return describe_buffer(device, device.allocate(count * item, zeroed), shape, dtype);
}

PyBuffer describe_buffer(const Device& device, Buffer buffer, const std::vector<py::ssize_t>& shape, const py::dtype& dtype) {
  PyBuffer b;
  b.device = device;
  b.buffer = std::move(buffer);
  b.dtype = dtype;
  b.shape = shape;
  b.itemsize = dtype.itemsize();
  b.format = facts_of(dtype).format;
  b.elements = element_facts(dtype);
  return b;
}

PyTypeObject* g_buffer_type = nullptr;

namespace {

// GPU memory imported from torch or CuPy is a device pointer: a host view of it
// would crash or read garbage. Copying is explicit: buf.to(mc.Device("cpu")).
void check_host_visible(const PyBuffer& b) {
  if (b.buffer.host_visible()) return;
  throw ArgumentError("this Buffer is GPU memory imported from another library (on " + b.device.info().backend + ":" +
                      std::to_string(b.device.info().index) + "), which the host cannot read in place; copy it "
                      "with buf.to(mc.Device(\"cpu\")) and view that, or use it from torch/CuPy");
}

// A Buffer on `to` holding a copy of b (the device's driver copy; waits for pending work on b).
PyBuffer copy_buffer(const PyBuffer& b, const py::object& to) {
  if (!py::isinstance<py::str>(to) && !py::isinstance<Device>(to)) {
    throw ArgumentError("buf.to() takes a metalcall.Device or a device spec such as \"cuda:1\", not " +
                         std::string(py::str(py::type::of(to).attr("__name__"))));
  }
  const Device d = py::isinstance<py::str>(to) ? Device::open(to.cast<std::string>()) : to.cast<Device>();
  Buffer copy;
  {
    WaitScope interruptible;  // Ctrl-C while the copy waits for the buffer's pending work
    GilRelease release;
    copy = d.copy(b.buffer);
  }
  return describe_buffer(d, std::move(copy), b.shape, b.dtype);
}

// Waits for pending work on `b`. Ctrl-C cancels that work and is raised at the
// interpreter's next check, after the view is made: NumPy swallows errors from the
// buffer protocol and would build something else instead. Cancelled CPU work stops at
// its next chunk, so the view waits for that; work on a GPU runs to its end, so the
// view is made at once (the memory stays valid; KeyboardInterrupt follows).
void wait_for_view(PyBuffer& b) {
  try {
    WaitScope interruptible;
    GilRelease release;
    b.buffer.wait_idle();
    return;
  } catch (const Interrupted&) {
    defer_interrupt();
  }
  if (b.device.info().backend != "cpu") return;
  GilRelease release;
  b.buffer.wait_idle();
}

}  // namespace

void init_buffer(py::module_& m) {
  auto cls = py::class_<PyBuffer>(m, "Buffer", py::buffer_protocol(), R"doc(
Device memory that NumPy and memoryview read and write in place.

``np.asarray(buf)`` and ``memoryview(buf)`` are zero-copy views; taking one
waits for submitted work that uses the buffer. New buffers are zero-filled.
)doc")
      .def_buffer([](PyBuffer& b) {
        check_host_visible(b);
        wait_for_view(b);
        std::vector<py::ssize_t> strides(b.shape.size());
        py::ssize_t stride = b.itemsize;
        for (std::size_t i = b.shape.size(); i-- > 0;) {
          strides[i] = stride;
          stride *= b.shape[i];
        }
        return py::buffer_info(b.buffer.data(), b.itemsize, b.format, static_cast<py::ssize_t>(b.shape.size()),
                               b.shape, strides, b.buffer.read_only());
      })
      .def_property_readonly("nbytes", [](const PyBuffer& b) { return b.buffer.nbytes(); }, "Size in bytes.")
      .def_property_readonly("shape", [](const PyBuffer& b) { return py::tuple(py::cast(b.shape)); })
      .def_property_readonly("dtype", [](const PyBuffer& b) { return b.dtype; })
      .def_property_readonly("size", [](const PyBuffer& b) {
        py::ssize_t n = 1;
        for (auto s : b.shape) n *= s;
        return n;
      }, "Number of elements.")
      .def_property_readonly("device", [](const PyBuffer& b) { return b.device; })
      .def("__len__", [](const PyBuffer& b) { return b.shape.empty() ? py::ssize_t(0) : b.shape[0]; })
      .def("numpy", [](py::object self) {
        check_host_visible(self.cast<const PyBuffer&>());
        return py::module_::import("numpy").attr("asarray")(self);
      }, "A zero-copy NumPy view (waits for pending work on this buffer first).")
      // NumPy tries the buffer protocol first and, when it fails, silently moves on to
      // __array__: this is where np.asarray of device-only memory gets its clear error.
      .def("__array__", [](py::object self, const py::object& dtype, const py::object& copy) {
        check_host_visible(self.cast<const PyBuffer&>());
        py::object np = py::module_::import("numpy");
        py::object view = np.attr("asarray")(py::memoryview(self));
        if (!dtype.is_none()) view = view.attr("astype")(dtype, py::arg("copy") = false);
        if (!copy.is_none() && copy.cast<bool>()) view = view.attr("copy")();
        return view;
      }, py::arg("dtype") = py::none(), py::kw_only(), py::arg("copy") = py::none())
      .def_property_readonly("read_only", [](const PyBuffer& b) { return b.buffer.read_only(); },
                             "True for memory its owner lets no one write (a JAX array, read-only DLPack or CUDA "
                             "array interface memory): kernels take it for const parameters only, views are read-only.")
      .def_property_readonly("host_visible", [](const PyBuffer& b) { return b.buffer.host_visible(); },
                             "False for GPU memory imported from torch/CuPy: np.asarray raises; copy with buf.to().")
      .def("to", &copy_buffer, py::arg("device"),
           "A new Buffer on `device` (a Device or a spec like \"cuda:1\") with a copy of this one's contents, "
           "always a copy, even onto the same device: CPU<->GPU, GPU<->GPU by the driver (a peer copy).")
      .def("read", [](const PyBuffer& b, const py::object& offset_arg, const py::object& nbytes) {
        // Taken as objects: pybind11's own conversion answered a float or a number past 64 bits with a
        // TypeError or RuntimeError, not an ArgumentError.
        auto byte_count = [](const py::object& v, const char* what) {
          if (PyBool_Check(v.ptr()) || !PyIndex_Check(v.ptr())) {
            throw ArgumentError(std::string("buf.read(") + what + "=...) takes an int, not " + Py_TYPE(v.ptr())->tp_name);
          }
          try {
            return index_value(v);
          } catch (const ArgumentError&) {  // past 64 bits: outside any buffer
            throw ArgumentError(std::string("buf.read(") + what + "=" + std::string(py::str(v)).substr(0, 40) +
                                ") is outside the buffer");
          }
        };
        const long long size = static_cast<long long>(b.buffer.nbytes());
        const long long offset = byte_count(offset_arg, "offset");
        const long long n = nbytes.is_none() ? size - offset : byte_count(nbytes, "nbytes");
        if (offset < 0 || n < 0 || offset > size || n > size - offset) {
          throw ArgumentError("buf.read(offset=" + std::to_string(offset) + ", nbytes=" + std::to_string(n) +
                              ") is outside the buffer's " + std::to_string(size) + " bytes");
        }
        std::string out(static_cast<std::size_t>(n), '\0');
        {
          WaitScope interruptible;  // Ctrl-C while the read waits for the buffer's pending work
          GilRelease release;
          b.buffer.copy_to_host(out.data(), static_cast<std::size_t>(offset), out.size());
        }
        return py::bytes(out);
      }, py::arg("offset") = 0, py::arg("nbytes") = py::none(),
         "A copy of `nbytes` bytes from byte `offset` (to the end by default), after the work that uses the "
         "buffer: on CUDA by the driver's copy, which leaves the memory on the GPU (a NumPy view moves the pages "
         "it reads to the host, and the next kernel faults them back); also for GPU memory imported from "
         "torch/CuPy. For a few values, such as a reduction's result.")
      .def("wait", [](PyBuffer& b) {
        WaitScope interruptible;  // Ctrl-C
        GilRelease release;
        b.buffer.wait_idle();
      }, "Waits until no submitted work uses this buffer.")
      .def("__repr__", [](const PyBuffer& b) {
        std::string shape;
        for (auto s : b.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(s);
        if (b.shape.size() == 1) shape += ",";
        return "<metalcall.Buffer shape=(" + shape + ") dtype=" + std::string(py::str(b.dtype)) + " nbytes=" +
               std::to_string(b.buffer.nbytes()) + (b.buffer.read_only() ? " read-only" : "") + " on " +
               b.device.info().backend + ">";
      });
  g_buffer_type = reinterpret_cast<PyTypeObject*>(cls.ptr());
}

}  // namespace metalcall::python
