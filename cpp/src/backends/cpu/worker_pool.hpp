// The CPU backend's workers: one per core, the calling thread counting as one.
// A dispatch's threadgroups are split into one contiguous part per worker, the same
// on every call, so that a worker finds its part of the data still in its own cache;
// each takes chunks of its own part, then of the others' (stealing balances late
// or slow workers). Between jobs a worker spins briefly before it sleeps, so
// back-to-back calls start without a wake-up; idle workers sleep, costing nothing.
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
  /** fn(ctx, begin, end, worker): runs items [begin, end) on worker `worker`; false: the job
   *  stops (no worker takes another chunk). */
  using RangeFn = bool (*)(void* ctx, std::uint64_t begin, std::uint64_t end, unsigned worker);

  static WorkerPool& instance();
  /** Workers, the caller included. */
  unsigned size() const { return static_cast<unsigned>(threads_.size()) + 1; }
  /** True while some worker is spinning for the next job: a job starts on it without a wake-up. */
  bool warm() const { return spinning_.load(std::memory_order_relaxed) > 0; }

  /** idle(ctx): called now and then on the calling thread while it waits for the workers. */
  using IdleFn = void (*)(void* ctx);

  /**
   * Runs fn over [0, count) in chunks of `chunk`, the calling thread taking part as
   * worker 0; returns when all are done. One job at a time: a caller under an
   * InterruptScope (metalcall/interrupt.hpp) that waits for another job to end throws
   * Interrupted when its check fires. A single chunk runs on the calling thread alone.
   */
  void parallel_for(std::uint64_t count, std::uint64_t chunk, RangeFn fn, void* ctx, IdleFn idle = nullptr);

 private:
  explicit WorkerPool(unsigned participants);
  /** One worker's part of a job: [next, end), taken chunk by chunk. On its own cache line. */
  struct alignas(64) Part {
    std::atomic<std::uint64_t> next{0};
    std::uint64_t end = 0;
  };
  struct Job {
    RangeFn fn;
    void* ctx;
    std::uint64_t chunk;
    Part* parts;  // size() of them
    unsigned part_count;
  };
  void worker_loop(unsigned index);
  /** Spins, then sleeps, until the generation differs from `seen`; returns the new one. */
  std::uint64_t wait_for_job(std::uint64_t seen);
  /** The caller's wait for the workers that joined the job to leave it. */
  void wait_for_workers(IdleFn idle, void* ctx);
  /** Takes job_mutex_; under an InterruptScope, a wait that its check stops throws Interrupted. */
  std::unique_lock<std::timed_mutex> take_job_lock();
  static void work_on(Job& job, unsigned worker);
  /** Takes chunks of `part` until none is left; false when the job stopped. */
  static bool drain(Job& job, Part& part, unsigned worker);

  std::timed_mutex job_mutex_;  // serialises parallel_for calls
  std::mutex mutex_;      // sleeping and waking on the condition variables
  std::condition_variable work_cv_, done_cv_;
  // Spinning workers poll generation_: the counters workers update live on other cache lines.
  alignas(64) std::atomic<std::uint64_t> generation_{0};  // bumped for every job
  std::atomic<Job*> job_{nullptr};                        // the running job, null once its chunks are all done
  alignas(64) std::atomic<unsigned> active_{0};  // workers that may be using job_: counted before they read it
  alignas(64) std::atomic<unsigned> spinning_{0};
  std::vector<std::thread> threads_;
  std::vector<Part> parts_;  // the running job's parts, one per worker (jobs run one at a time)
};

}  // namespace metalcall::cpu
