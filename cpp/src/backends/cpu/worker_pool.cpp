#include "backends/cpu/worker_pool.hpp"

#include <algorithm>
#include <chrono>
#include <new>

#include "backends/cpu/fork_guard.hpp"
#include "core/interrupt.hpp"
#include "metalcall/interrupt.hpp"

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
#include <immintrin.h>
#endif

namespace metalcall::cpu {

namespace {

// How long an idle worker, or a caller waiting for workers, spins before it sleeps.
// Longer than the gap between two back-to-back calls from Python (a few µs), short
// enough that an idle process stops using the CPU at once.
constexpr std::chrono::microseconds kSpin{100};

// Tells the core (and a sibling hyperthread) that this is a spin loop.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#else
  std::this_thread::yield();
#endif
}

// Spins until ready() or kSpin passed; true if ready. Reads the clock every 64 turns.
template <class Ready>
bool spin_until(Ready ready) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (unsigned turn = 1;; ++turn) {
    if (ready()) return true;
    cpu_relax();
    if (turn % 64 == 0 && std::chrono::steady_clock::now() > deadline) return ready();
  }
}

}  // namespace

namespace {
std::atomic<WorkerPool*> g_pool{nullptr};
std::mutex g_pool_mutex;  // creating the pool
// A forked child has none of the workers, and the pool's counters and locks may be
// frozen mid-job: it builds a new pool on first use (the old one leaks). Registered
// when the library loads, so that no fork can come before it.
[[maybe_unused]] const bool g_pool_reset = (reset_on_fork(&g_pool,
                                         [](void*) {
                                           g_pool.store(nullptr, std::memory_order_relaxed);
                                           new (&g_pool_mutex) std::mutex;
                                         }),
                           true);
}  // namespace

WorkerPool& WorkerPool::instance() {
  WorkerPool* pool = g_pool.load(std::memory_order_acquire);
  if (pool) return *pool;
  std::lock_guard<std::mutex> lock(g_pool_mutex);
  pool = g_pool.load(std::memory_order_acquire);
  if (!pool) {
    // Never destroyed: threads must not be joined during interpreter shutdown.
    pool = new WorkerPool(std::max(1u, std::thread::hardware_concurrency()));
    g_pool.store(pool, std::memory_order_release);
  }
  return *pool;
}

WorkerPool::WorkerPool(unsigned participants) : parts_(participants) {
  for (unsigned i = 1; i < participants; ++i) threads_.emplace_back([this, i] { worker_loop(i); });
  for (auto& t : threads_) t.detach();
}

bool WorkerPool::drain(Job& job, Part& part, unsigned worker) {
  // A plain load first: an exhausted part costs a shared read, not a contended write.
  while (part.next.load(std::memory_order_relaxed) < part.end) {
    const std::uint64_t begin = part.next.fetch_add(job.chunk, std::memory_order_relaxed);
    if (begin >= part.end) return true;
    if (!job.fn(job.ctx, begin, std::min(part.end, begin + job.chunk), worker)) {
      // Stopped: every part is used up, so that no worker takes another chunk.
      for (unsigned p = 0; p < job.part_count; ++p) job.parts[p].next.store(job.parts[p].end, std::memory_order_relaxed);
      return false;
    }
  }
  return true;
}

void WorkerPool::work_on(Job& job, unsigned worker) {
  // Its own part first (its data is likely in its cache from the last call), then
  // the following parts, which a worker that came late or runs slowly left.
  for (unsigned k = 0; k < job.part_count; ++k)
    if (!drain(job, job.parts[(worker + k) % job.part_count], worker)) return;
}

std::uint64_t WorkerPool::wait_for_job(std::uint64_t seen) {
  std::uint64_t now = seen;
  spinning_.fetch_add(1, std::memory_order_relaxed);
  const bool started = spin_until([&] { return (now = generation_.load(std::memory_order_acquire)) != seen; });
  spinning_.fetch_sub(1, std::memory_order_relaxed);
  if (started) return now;
  std::unique_lock<std::mutex> lock(mutex_);
  work_cv_.wait(lock, [&] { return (now = generation_.load(std::memory_order_acquire)) != seen; });
  return now;
}

void WorkerPool::worker_loop(unsigned index) {
  std::uint64_t seen = 0;
  for (;;) {
    seen = wait_for_job(seen);
    // Counted before reading job_: the caller waits for active_ == 0 after clearing
    // job_, so a job is never used after its parallel_for returned.
    active_.fetch_add(1, std::memory_order_seq_cst);
    if (Job* job = job_.load(std::memory_order_seq_cst)) work_on(*job, index);
    if (active_.fetch_sub(1, std::memory_order_seq_cst) == 1) {
      std::lock_guard<std::mutex> lock(mutex_);  // the caller may be between its check and its sleep
      done_cv_.notify_all();
    }
  }
}

void WorkerPool::wait_for_workers(IdleFn idle, void* ctx) {
  auto done = [this] { return active_.load(std::memory_order_seq_cst) == 0; };
  if (spin_until(done)) return;
  std::unique_lock<std::mutex> lock(mutex_);
  if (!idle) {
    done_cv_.wait(lock, done);
    return;
  }
  // A chunk may run long (or forever, until it is stopped): the caller keeps looking for Ctrl-C.
  while (!done_cv_.wait_for(lock, std::chrono::milliseconds(1), done)) {
    lock.unlock();
    idle(ctx);
    lock.lock();
  }
}

std::unique_lock<std::timed_mutex> WorkerPool::take_job_lock() {
  std::unique_lock<std::timed_mutex> lock(job_mutex_, std::try_to_lock);
  if (lock.owns_lock()) return lock;
  if (!interrupt_check_installed()) {
    lock.lock();
    return lock;
  }
  // Another thread's job runs (maybe a kernel that never ends): Ctrl-C must still reach this one.
  while (!lock.try_lock_for(std::chrono::milliseconds(20))) {
    if (interrupt_requested()) throw Interrupted();
  }
  return lock;
}

void WorkerPool::parallel_for(std::uint64_t count, std::uint64_t chunk, RangeFn fn, void* ctx, IdleFn idle) {
  if (count == 0) return;
  chunk = std::max<std::uint64_t>(1, chunk);
  const std::unique_lock<std::timed_mutex> serial = take_job_lock();
  if (threads_.empty() || count <= chunk) {
    fn(ctx, 0, count, 0);  // one chunk: involving workers would only add latency
    return;
  }
  Job job;
  job.fn = fn;
  job.ctx = ctx;
  job.chunk = chunk;
  job.parts = parts_.data();
  job.part_count = static_cast<unsigned>(parts_.size());
  // Equal contiguous parts, the same for the same count on every call.
  for (unsigned p = 0; p < job.part_count; ++p) {
    parts_[p].next.store(count * p / job.part_count, std::memory_order_relaxed);
    parts_[p].end = count * (p + 1) / job.part_count;
  }
  job_.store(&job, std::memory_order_seq_cst);
  {
    // Under the lock: a worker about to sleep either sees the new generation or is woken.
    std::lock_guard<std::mutex> lock(mutex_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  work_cv_.notify_all();  // no system call when every worker is spinning
  work_on(job, 0);
  job_.store(nullptr, std::memory_order_seq_cst);
  wait_for_workers(idle, ctx);
}

}  // namespace metalcall::cpu
