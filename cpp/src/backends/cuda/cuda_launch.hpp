// What CudaQueue::enqueue (cuda_queue.cpp) needs to launch a dispatch: the kernel's parameter
// block, the parameter space a launch may use, and the choice of build (restrict or not,
// coarsened or not).
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <string>

#include "backends/cuda/cuda_api.hpp"
#include "backends/cuda/cuda_device.hpp"
#include "core/backend.hpp"
#include "metalcall/errors.hpp"
#include "msl/targets/cuda_abi.hpp"

namespace metalcall::cuda {

// Grids from this many threads along x (and 1 along y and z) take a kernel's coarsened entry point:
// a quarter of them still fills an H100/H200 (132 SMs x 2048 threads ~ 270k).
constexpr unsigned kCoarsenFrom = 1u << 18;

// True when two memory arguments' byte ranges intersect and the kernel may write one
// of them: such a call must run the build without restrict. (Staged host memory has
// its own device copy, so only Buffers can overlap.)
inline bool buffers_overlap(const DispatchCommand& command) {
  const auto& args = command.args;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (!args[i].buffer || args[i].memory_nbytes() == 0) continue;
    // A view of a Buffer from its offset (a texture's buffer whole: offset 0, no view).
    const auto* a = static_cast<const char*>(args[i].buffer->data()) + args[i].offset;
    for (std::size_t j = i + 1; j < args.size(); ++j) {
      if (!args[j].buffer || args[j].memory_nbytes() == 0 || !(args[i].written || args[j].written)) continue;
      const auto* b = static_cast<const char*>(args[j].buffer->data()) + args[j].offset;
      if (a < b + args[j].memory_nbytes() && b < a + args[i].memory_nbytes()) return true;
    }
  }
  return false;
}

// The parameter space a launch may use: 4 KiB everywhere, 32764 bytes with a CUDA 12.1+
// driver on Volta or later.
inline std::size_t parameter_limit(const DeviceProps& props) {
  return api().driver_version >= 12010 && props.cc_major >= 7 ? METALCALL_CUDA_PARAM_BYTES_LARGE
                                                                : METALCALL_CUDA_PARAM_BYTES_BASE;
}

// A kernel's parameter block, on the stack when small.
class ParameterBlock {
 public:
  explicit ParameterBlock(std::size_t bytes) : bytes_(bytes) {
    if (bytes > sizeof(small_)) large_.reset(new unsigned char[bytes]);
    std::memset(data(), 0, bytes);
  }
  unsigned char* data() { return large_ ? large_.get() : small_; }
  /** Copies `n` bytes to `offset`; the layout table guarantees the fields fit. */
  void put(long long offset, const void* src, std::size_t n, const std::string& kernel) {
    if (offset < 0 || static_cast<std::size_t>(offset) + n > bytes_)
      throw DeviceError("[cuda] kernel '" + kernel + "': an argument does not fit its parameter block field");
    std::memcpy(data() + offset, src, n);
  }

 private:
  std::size_t bytes_;
  alignas(16) unsigned char small_[512];
  std::unique_ptr<unsigned char[]> large_;
};

}  // namespace metalcall::cuda
