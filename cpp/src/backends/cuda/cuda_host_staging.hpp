// Moving large NumPy (pageable host) arguments to and from the GPU through a few
// reused page-locked (pinned) chunks: host memcpy into a chunk overlaps the DMA of
// the chunk before it, in both directions. Used by CudaQueue under its launch lock.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "backends/cuda/cuda_api.hpp"

namespace metalcall::cuda {

/**
 * A few threads that split one large memcpy between them (the caller takes a
 * share too): one thread copies pageable memory at well under the ~50 GB/s a
 * PCIe 5 GPU moves. Calls must not overlap (the owner serialises them).
 */
class CopyTeam {
 public:
  /** `threads` counts the caller: `threads - 1` helpers are started. */
  explicit CopyTeam(unsigned threads);
  ~CopyTeam();
  CopyTeam(const CopyTeam&) = delete;
  CopyTeam& operator=(const CopyTeam&) = delete;

  /** memcpy(dst, src, n), in parallel when `n` is large enough to be worth it. */
  void copy(void* dst, const void* src, std::size_t n);

 private:
  void helper(unsigned index);
  /** Copies part `index` of `parts` of the current job. */
  void copy_part(unsigned index, unsigned parts, char* dst, const char* src, std::size_t n);

  std::vector<std::thread> helpers_;
  std::mutex mutex_;
  std::condition_variable start_, done_;
  std::uint64_t generation_ = 0;  // one per job; helpers run each job once
  unsigned parts_ = 0;            // of the current job; helpers with a higher index skip it
  unsigned remaining_ = 0;        // helpers' parts not yet copied
  char* dst_ = nullptr;
  const char* src_ = nullptr;
  std::size_t n_ = 0;
  bool stop_ = false;
};

/**
 * The pinned chunks of one stream. Not thread-safe: the queue calls it with its
 * launch lock held. Each chunk has an event recorded after the last copy that used
 * it, so the host touches a chunk only once the GPU is done with it.
 */
class HostStaging {
 public:
  // Below this, an argument is copied straight from its pageable memory (the
  // driver stages it through its own small pinned buffer): the pipeline's fixed
  // cost (an event and a synchronisation per chunk, waking the copy threads) is
  // worth paying only once copies take tens of microseconds.
  static constexpr std::size_t kMinBytes = std::size_t(256) << 10;
  // Chunk size and count: 16 MiB takes ~0.3 ms at PCIe 5 speed, long against the
  // per-chunk cost; four chunks keep the DMA engine fed while the host copies.
  static constexpr std::size_t kChunkBytes = std::size_t(16) << 20;
  static constexpr unsigned kChunks = 4;

  explicit HostStaging(CUstream stream) : stream_(stream) {}
  ~HostStaging();
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;

  /**
   * True when `bytes` should go through the pinned chunks. Allocates them on first
   * use (the context must be current); if the driver cannot pin the memory, it is
   * not tried again and every argument takes the direct path.
   */
  bool use_for(std::size_t bytes);
  /** Enqueues host -> device; returns once `src` has been read (DMA may still run). */
  void copy_in(CUdeviceptr dst, const void* src, std::size_t n);
  /** Enqueues device -> host after all earlier work on the stream, and waits: returns once `dst` holds the data. */
  void copy_out(void* dst, CUdeviceptr src, std::size_t n);

 private:
  struct Chunk {
    void* host = nullptr;     // kChunkBytes of pinned memory
    CUevent used = nullptr;   // recorded after the last copy from or to `host`
    bool pending = false;     // `used` recorded and not yet waited on
  };
  bool allocate();
  /** Blocks until the GPU is done with `c`. */
  void wait(Chunk& c, const char* what);
  void record(Chunk& c, const char* what);

  CUstream stream_;
  bool tried_ = false;  // allocate() ran
  bool ok_ = false;     // and succeeded
  std::vector<Chunk> chunks_;
  unsigned next_ = 0;   // the chunk copy_in fills next (round robin)
  std::unique_ptr<CopyTeam> team_;
};

}  // namespace metalcall::cuda
