// What the CUDA backend's files share: a GPU's properties, the driver's current
// context per thread, and turning driver errors into exceptions.
#pragma once

#include <cstddef>
#include <string>

#include "backends/cuda/cuda_api.hpp"
#include "metalcall/device.hpp"

namespace metalcall::cuda {

/** One GPU as the backend sees it. */
struct DeviceProps {
  DeviceInfo info;
  CUdevice device = 0;
  int cc_major = 0, cc_minor = 0;
  unsigned max_block[3] = {1024, 1024, 64};
  unsigned max_grid[3] = {2147483647u, 65535u, 65535u};
  std::size_t smem_optin = 48 * 1024;
};

/** The driver's text for `r`. */
std::string describe(CUresult r);
/** DeviceError "[cuda] WHAT failed: why" unless `r` is success. */
void check(CUresult r, const std::string& what);
/** Makes `c` the calling thread's current context (cheap when it already is). */
void make_current(CUcontext c);
/**
 * cuMemFree of memory from cuMemAlloc/cuMemAllocManaged in context `c`. The driver may wait for
 * the whole device first (implicit synchronisation), behind a kernel that never ends: the wait
 * goes through the embedder's blocking-wait hook (a thread holding the GIL lets go of it), and
 * callers hold no lock of a queue, which a stop needs.
 */
void free_device_memory(CUcontext c, CUdeviceptr p);

}  // namespace metalcall::cuda
