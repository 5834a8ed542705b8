// The CPU backend's workers: one per core, the calling thread counting as one.
// A dispatch's threadgroups are split into chunks that workers take in turn.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace metalcall::cpu {

class WorkerPool {
 public:
  /** fn(ctx, begin, end, worker): runs items [begin, end) on worker `worker`. */
  using RangeFn = void (*)(void* ctx, std::uint64_t begin, std::uint64_t end, unsigned worker);

  static WorkerPool& instance();
  /** Workers, the caller included. */
  unsigned size() const { return static_cast<unsigned>(threads_.size()) + 1; }

  /** Runs fn over [0, count) in chunks of `chunk`; returns when all are done. One job at a time. */
  void parallel_for(std::uint64_t count, std::uint64_t chunk, RangeFn fn, void* ctx);

 private:
  explicit WorkerPool(unsigned participants);
  struct Job {
    RangeFn fn;
    void* ctx;
    std::uint64_t count, chunk;
    std::atomic<std::uint64_t> next{0};
  };
  void worker_loop(unsigned index);
  static void work_on(Job& job, unsigned worker);

  std::mutex job_mutex_;  // serialises parallel_for calls
  std::mutex mutex_;
  std::condition_variable work_cv_, done_cv_;
  std::uint64_t generation_ = 0;
  Job* job_ = nullptr;
  unsigned busy_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace metalcall::cpu
