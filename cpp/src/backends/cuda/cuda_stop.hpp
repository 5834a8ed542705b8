// Stopping running CUDA kernels (docs/design.md, "Stopping kernels"): every loop of a
// translated kernel counts its iterations and every 1024th reads a word in device memory
// (the prelude's metal_stop.h); a thread whose submission's ticket is at most the word's
// value exits. One word per queue (tickets are a queue's), raised (never lowered) by a copy
// on a stream of its own, which runs beside the kernel it stops; the modules a device loads
// point at its queue's word (their __constant__ __metalcall_stop_word). Kernels read the low
// 32 bits of the word and of their ticket (modulo 2^32: the queue keeps them close).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "backends/cuda/cuda_api.hpp"

namespace metalcall::cuda {

class StopWord {
 public:
  /** A new word, 0, in `ctx` (never freed: queues and their modules live for the process). */
  explicit StopWord(CUcontext ctx);
  StopWord(const StopWord&) = delete;
  StopWord& operator=(const StopWord&) = delete;
  /** Points a loaded module's __metalcall_stop_word at this word (a module without one is left alone). */
  void attach(CUmodule module);
  /** Submissions up to `ticket` stop at their kernels' next check; returns once the word holds it. */
  void raise(std::uint64_t ticket);
  /** The highest ticket raised so far (0: none). */
  std::uint64_t value();
  /** Copies `n` bytes of device memory to the host on this word's stream, which waits for no kernel
   *  (a synchronous copy, on the legacy default stream, would wait for the device's queue). */
  void read(void* dst, CUdeviceptr src, std::size_t n, const std::string& what);

 private:
  void write(CUdeviceptr to, std::uint64_t value);  // mutex_ held
  CUcontext ctx_;
  CUdeviceptr word_ = 0;
  CUstream stream_ = nullptr;                // the copies' own stream (non-blocking); also read()'s
  std::uint64_t* staging_ = nullptr;         // page-locked: copied from while kernels run
  std::mutex mutex_;
  std::uint64_t value_ = 0;
};

}  // namespace metalcall::cuda
