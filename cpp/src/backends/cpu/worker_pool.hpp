// The CPU backend's workers: one per core this process may run on, the calling thread
// counting as one. A job says how many it wants (its width, from the work it holds): the
// caller and workers 1..width-1, the same lowest ones every time, so that a few stay warm
// and the rest sleep. Each chosen worker is offered the job on its own cache line (the
// others are not disturbed) and woken only if it sleeps; the wake-ups are shared out
// among the caller and the workers as they arrive, a tree rather than one thread waking
// all. The job's items are split into one contiguous part per participant, the same on
// every call of that size and width, so that a worker finds its part of the data still in
// its own cache; each takes chunks of its own part, then of the others' (stealing
// balances late or slow workers). Between jobs a worker spins briefly (giving its core to
// other threads after the first µs) before it sleeps on a futex, so back-to-back calls
// start without a wake-up and an idle process costs nothing.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace metalcall::cpu {

class WorkerPool {
 public:
  /** fn(ctx, begin, end, worker): runs items [begin, end) on worker `worker`; false: the job
   *  stops (no worker takes another chunk). */
  using RangeFn = bool (*)(void* ctx, std::uint64_t begin, std::uint64_t end, unsigned worker);

  static WorkerPool& instance();
  /** Workers, the caller included. */
  unsigned size() const { return size_; }
  /** True while some worker is spinning for the next job: a job starts on it without a wake-up. */
  bool warm() const { return spinning_.load(std::memory_order_relaxed) > 0; }

  /** idle(ctx): called now and then on the calling thread while it waits for the workers. */
  using IdleFn = void (*)(void* ctx);

  /**
   * Runs fn over [0, count) in chunks of `chunk`, the calling thread taking part as
   * worker 0, with workers 1..width-1 (width 0: all of them); returns when all are done.
   * One job at a time: a caller under an InterruptScope (metalcall/interrupt.hpp) that
   * waits for another job to end throws Interrupted when its check fires. A single chunk,
   * or width 1, runs on the calling thread alone.
   */
  void parallel_for(std::uint64_t count, std::uint64_t chunk, RangeFn fn, void* ctx, IdleFn idle = nullptr,
                    unsigned width = 0);

 private:
  explicit WorkerPool(unsigned participants);
  /** One participant's part of a job: [next, end), taken chunk by chunk. On its own cache line. */
  struct alignas(64) Part {
    std::atomic<std::uint64_t> next{0};
    std::uint64_t end = 0;
  };
  /** Where one worker is offered jobs: written by the caller, polled by the worker alone. */
  struct alignas(64) Slot {
    std::atomic<std::uint32_t> ticket{0};  // the last job offered (a futex word: it sleeps on it)
    std::atomic<bool> sleeping{false};     // set before it sleeps: an offer must wake it
  };
  struct Job {
    RangeFn fn;
    void* ctx;
    std::uint64_t chunk;
    Part* parts;  // width of them
    unsigned width;
  };
  void worker_loop(unsigned index);
  /** Spins, then sleeps, until the worker's ticket differs from `seen`; returns the new one. */
  std::uint32_t wait_for_job(Slot& slot, std::uint32_t seen);
  /** Offers the published job to workers 1..width-1 and lists those that sleep. */
  void offer(unsigned width);
  /** Takes up to `most` of the listed wake-ups that nobody took yet, and wakes those workers. */
  void wake_some(unsigned most);
  /** The caller's wait for the workers that joined the job to leave it. */
  void wait_for_workers(IdleFn idle, void* ctx);
  /** Takes job_mutex_; under an InterruptScope, a wait that its check stops throws Interrupted. */
  std::unique_lock<std::timed_mutex> take_job_lock();
  static void work_on(Job& job, unsigned worker);
  /** Takes chunks of `part` until none is left; false when the job stopped. */
  static bool drain(Job& job, Part& part, unsigned worker);

  const unsigned size_;
  std::timed_mutex job_mutex_;  // serialises parallel_for calls
  std::uint32_t ticket_ = 0;    // the last job's number (under job_mutex_)
  alignas(64) std::atomic<Job*> job_{nullptr};  // the running job, null once its chunks are all done
  // Workers that may be using job_: counted before they read it. The last to leave bumps
  // done_ (the caller's futex word) and wakes the caller if it sleeps.
  alignas(64) std::atomic<unsigned> active_{0};
  std::atomic<std::uint32_t> done_{0};
  std::atomic<bool> caller_sleeps_{false};
  alignas(64) std::atomic<unsigned> spinning_{0};
  // The running job's sleeping workers to wake (sleepers_[0..wake_count_)), taken in order.
  alignas(64) std::atomic<unsigned> wake_next_{0};
  std::atomic<unsigned> wake_count_{0};
  std::unique_ptr<std::atomic<unsigned>[]> sleepers_;
  std::unique_ptr<Slot[]> slots_;  // one per worker; slot 0 (the caller's) unused
  std::unique_ptr<Part[]> parts_;  // the running job's parts (jobs run one at a time)
};

}  // namespace metalcall::cpu
