// GPU memory of other libraries as Buffers, in place: DLPack producers reporting
// kDLCUDA (torch, CuPy, JAX) and objects with __cuda_array_interface__ (Numba). Kernel
// arguments take a faster path first (foreign_arguments.cpp).
#include <cstdint>

#include "bindings.hpp"

namespace metalcall::python {

namespace {

std::string name_of(const py::handle& x) { return py::str(py::type::of(x).attr("__name__")); }

}  // namespace

PyBuffer import_cuda_array(const py::handle& x, const Device& device) {
  if (device.info().backend != "cuda") {
    throw ArgumentError("the " + name_of(x) + " is CUDA memory (__cuda_array_interface__), but a " +
                        device.info().backend + " device uses host memory (kDLCPU) only; run the kernel on "
                        "mc.Device(\"cuda\"), or copy it to the host first");
  }
  std::optional<CudaArrayView> view = read_cuda_array_interface(x);
  if (!view) throw ArgumentError("the " + name_of(x) + " has no __cuda_array_interface__");
  // The CAI stream rule (v3): our stream waits on an event recorded on the producer's
  // stream now, so the producer's pending work on the memory comes first; the host does not wait.
  if (view->stream) device.wait_for_stream(*view->stream);
  Buffer buffer = device.wrap(reinterpret_cast<void*>(view->ptr), view->nbytes, keep_producer_alive(x.ptr()), view->read_only);
  return describe_buffer(device, std::move(buffer), view->shape, view->dtype);
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
