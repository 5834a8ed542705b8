// Pinned staging of NumPy arguments (see cuda_host_staging.hpp).
//
// Copy in, per chunk-sized piece: wait until the next chunk's previous DMA is done,
// memcpy the piece into it (the copy team), enqueue the DMA to the device, record
// the chunk's event. The memcpy of piece k+1 runs while piece k is in flight.
// Copy out: enqueue up to kChunks DMAs into the chunks, then for each piece wait on
// its chunk's event, memcpy it out, and enqueue the piece kChunks further on.
#include "backends/cuda/cuda_host_staging.hpp"

#include <algorithm>
#include <cstring>

#include "backends/cuda/cuda_device.hpp"

namespace metalcall::cuda {

namespace {

// A memcpy part below this is not worth waking a thread for (~50 µs of copying).
constexpr std::size_t kMinPart = std::size_t(1) << 20;
// Copy threads per queue, the caller included: enough to outrun the DMA engine from
// pageable memory (one thread copies ~10 GB/s), and at most half the cores.
constexpr unsigned kMaxCopyThreads = 8;

unsigned copy_threads() {
  const unsigned cores = std::thread::hardware_concurrency();
  return std::max(1u, std::min(kMaxCopyThreads, cores / 2));
}

}  // namespace

// ---- CopyTeam ----

CopyTeam::CopyTeam(unsigned threads) {
  for (unsigned i = 1; i < threads; ++i) helpers_.emplace_back([this, i] { helper(i); });
}

CopyTeam::~CopyTeam() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  start_.notify_all();
  for (auto& t : helpers_) t.join();
}

void CopyTeam::copy_part(unsigned index, unsigned parts, char* dst, const char* src, std::size_t n) {
  // Parts are whole pages (but the last), so no two threads write one page.
  const std::size_t per = ((n + parts - 1) / parts + 4095) & ~std::size_t(4095);
  const std::size_t begin = std::min(n, std::size_t(index) * per);
  const std::size_t end = std::min(n, begin + per);
  if (end > begin) std::memcpy(dst + begin, src + begin, end - begin);
}

void CopyTeam::copy(void* dst, const void* src, std::size_t n) {
  const unsigned parts =
      static_cast<unsigned>(std::min<std::size_t>(helpers_.size() + 1, std::max<std::size_t>(1, n / kMinPart)));
  if (parts <= 1) {
    if (n) std::memcpy(dst, src, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    dst_ = static_cast<char*>(dst);
    src_ = static_cast<const char*>(src);
    n_ = n;
    parts_ = parts;
    remaining_ = parts - 1;
    ++generation_;
  }
  start_.notify_all();
  copy_part(0, parts, static_cast<char*>(dst), static_cast<const char*>(src), n);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [this] { return remaining_ == 0; });
}

void CopyTeam::helper(unsigned index) {
  std::uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    start_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    if (index >= parts_) continue;  // a small job: not this helper's
    const unsigned parts = parts_;
    char* dst = dst_;
    const char* src = src_;
    const std::size_t n = n_;
    lock.unlock();
    copy_part(index, parts, dst, src, n);
    lock.lock();
    if (--remaining_ == 0) done_.notify_one();
  }
}

// ---- HostStaging ----

HostStaging::~HostStaging() {
  // Queues live as long as the process; this runs at most at exit, when the
  // driver may already be gone: results are ignored.
  team_.reset();
  if (!api().driver_ok) return;
  for (auto& c : chunks_) {
    if (c.used) api().cuEventDestroy(c.used);
    if (c.host) api().cuMemFreeHost(c.host);
  }
}

bool HostStaging::use_for(std::size_t bytes) {
  if (bytes < kMinBytes) return false;
  if (!tried_) {
    tried_ = true;
    ok_ = allocate();
  }
  return ok_;
}

bool HostStaging::allocate() {
  const Api& a = api();
  chunks_.resize(kChunks);
  bool ok = true;
  for (auto& c : chunks_) {
    ok = ok && a.cuMemAllocHost(&c.host, kChunkBytes) == CUDA_SUCCESS;
    ok = ok && a.cuEventCreate(&c.used, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS;
  }
  if (!ok) {
    // Pinned memory is a limited resource (ulimit -l, containers): fall back to
    // the driver's own staging rather than fail the call.
    for (auto& c : chunks_) {
      if (c.used) a.cuEventDestroy(c.used);
      if (c.host) a.cuMemFreeHost(c.host);
    }
    chunks_.clear();
    return false;
  }
  team_ = std::make_unique<CopyTeam>(copy_threads());
  return true;
}

void HostStaging::wait(Chunk& c, const char* what) {
  if (!c.pending) return;
  c.pending = false;  // waited on, even if it reports an error (then the context is broken anyway)
  check(api().cuEventSynchronize(c.used), what);
}

void HostStaging::record(Chunk& c, const char* what) {
  check(api().cuEventRecord(c.used, stream_), what);
  c.pending = true;
}

void HostStaging::copy_in(CUdeviceptr dst, const void* src, std::size_t n) {
  static const char* const what = "copying an argument to the GPU";
  const auto* from = static_cast<const char*>(src);
  for (std::size_t done = 0; done < n; done += kChunkBytes) {
    const std::size_t len = std::min(kChunkBytes, n - done);
    Chunk& c = chunks_[next_];
    next_ = (next_ + 1) % kChunks;
    wait(c, what);  // its previous DMA must have read it before it is overwritten
    team_->copy(c.host, from + done, len);
    check(api().cuMemcpyHtoDAsync(dst + done, c.host, len, stream_), what);
    record(c, what);
  }
}

void HostStaging::copy_out(void* dst, CUdeviceptr src, std::size_t n) {
  static const char* const what = "copying a result back from the GPU";
  auto* to = static_cast<char*>(dst);
  const std::size_t pieces = (n + kChunkBytes - 1) / kChunkBytes;
  const unsigned first = next_;
  auto chunk_of = [&](std::size_t piece) -> Chunk& { return chunks_[(first + piece) % kChunks]; };
  auto length_of = [&](std::size_t piece) { return std::min(kChunkBytes, n - piece * kChunkBytes); };
  // The stream orders these DMAs after any earlier copy from the same chunk; only
  // the host side has to wait for the GPU, before it reads a chunk.
  auto enqueue = [&](std::size_t piece) {
    Chunk& c = chunk_of(piece);
    check(api().cuMemcpyDtoHAsync(c.host, src + piece * kChunkBytes, length_of(piece), stream_), what);
    record(c, what);
  };
  for (std::size_t p = 0; p < std::min<std::size_t>(pieces, kChunks); ++p) enqueue(p);
  for (std::size_t p = 0; p < pieces; ++p) {
    Chunk& c = chunk_of(p);
    wait(c, what);
    team_->copy(to + p * kChunkBytes, c.host, length_of(p));
    if (p + kChunks < pieces) enqueue(p + kChunks);
  }
  next_ = static_cast<unsigned>((first + pieces) % kChunks);
}

}  // namespace metalcall::cuda
