// GPU memory of other libraries as Buffers, in place: DLPack producers reporting
// kDLCUDA (torch, CuPy, JAX) and objects with __cuda_array_interface__ (Numba). Kernel
// arguments take a faster path first (foreign_arguments.cpp).
#include <cstdint>

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

}  // namespace metalcall::python
