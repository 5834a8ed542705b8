#include "backends/cpu/worker_pool.hpp"

#include <algorithm>
#include <chrono>
#include <new>
#include <thread>

#include "backends/cpu/fork_guard.hpp"
#include "backends/cpu/wait_word.hpp"
#include "core/interrupt.hpp"
#include "metalcall/interrupt.hpp"

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
#include <immintrin.h>
#endif
#if defined(__linux__)
#include <sched.h>
#endif

namespace metalcall::cpu {

namespace {

// How long an idle worker, or a caller waiting for workers, spins before it sleeps.
// Longer than the gap between two back-to-back calls from Python (a few µs), short
// enough that an idle process stops using the CPU at once. It never yields while it
// spins: on a busy machine the scheduler gives a yielding thread's core to another
// process for a whole time slice (milliseconds), and the job waits for it.
constexpr std::chrono::microseconds kSpin{50};
// Wake-ups each participant takes on as it arrives: the sleepers are woken as a tree.
constexpr unsigned kWakesEach = 2;
// A caller waiting for a chunk that runs long looks for Ctrl-C this often.
constexpr long kIdleCheckUs = 1000;

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
  const auto start = std::chrono::steady_clock::now();
  for (unsigned turn = 1;; ++turn) {
    if (ready()) return true;
    cpu_relax();
    if (turn % 64 == 0 && std::chrono::steady_clock::now() - start > kSpin) return ready();
  }
}

// The cores this process may run on (its affinity mask, where the system has one).
unsigned usable_cores() {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return static_cast<unsigned>(n);
  }
#endif
  return std::max(1u, std::thread::hardware_concurrency());
}

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
    pool = new WorkerPool(usable_cores());
    g_pool.store(pool, std::memory_order_release);
  }
  return *pool;
}

WorkerPool::WorkerPool(unsigned participants)
    : size_(participants),
      sleepers_(new std::atomic<unsigned>[participants]),
      slots_(new Slot[participants]),
      parts_(new Part[participants]) {
  for (unsigned i = 1; i < participants; ++i) std::thread([this, i] { worker_loop(i); }).detach();
}

bool WorkerPool::drain(Job& job, Part& part, unsigned worker) {
  // A plain load first: an exhausted part costs a shared read, not a contended write.
  while (part.next.load(std::memory_order_relaxed) < part.end) {
    const std::uint64_t begin = part.next.fetch_add(job.chunk, std::memory_order_relaxed);
    if (begin >= part.end) return true;
    if (!job.fn(job.ctx, begin, std::min(part.end, begin + job.chunk), worker)) {
      // Stopped: every part is used up, so that no worker takes another chunk.
      for (unsigned p = 0; p < job.width; ++p) job.parts[p].next.store(job.parts[p].end, std::memory_order_relaxed);
      return false;
    }
  }
  return true;
}

void WorkerPool::work_on(Job& job, unsigned worker) {
  // Its own part first (its data is likely in its cache from the last call), then
  // the following parts, which a worker that came late or runs slowly left.
  for (unsigned k = 0; k < job.width; ++k)
    if (!drain(job, job.parts[(worker + k) % job.width], worker)) return;
}

std::uint32_t WorkerPool::wait_for_job(Slot& slot, std::uint32_t seen) {
  std::uint32_t now = seen;
  auto offered = [&] { return (now = slot.ticket.load(std::memory_order_acquire)) != seen; };
  spinning_.fetch_add(1, std::memory_order_relaxed);
  const bool started = spin_until(offered);
  spinning_.fetch_sub(1, std::memory_order_relaxed);
  while (!started) {
    // Said before the last look at the ticket: an offer made after that look sees it and wakes us.
    slot.sleeping.store(true, std::memory_order_seq_cst);
    if (slot.ticket.load(std::memory_order_seq_cst) == seen) wait_word(slot.ticket, seen);
    slot.sleeping.store(false, std::memory_order_relaxed);
    if (offered()) break;
  }
  return now;
}

void WorkerPool::worker_loop(unsigned index) {
  Slot& slot = slots_[index];
  std::uint32_t seen = 0;
  for (;;) {
    seen = wait_for_job(slot, seen);
    // Counted before reading job_: the caller waits for active_ == 0 after clearing
    // job_, so a job is never used after its parallel_for returned. A worker that
    // woke late may find a later job, which may not want it.
    active_.fetch_add(1, std::memory_order_seq_cst);
    if (Job* job = job_.load(std::memory_order_seq_cst); job && index < job->width) {
      wake_some(kWakesEach);
      work_on(*job, index);
    }
    if (active_.fetch_sub(1, std::memory_order_seq_cst) == 1) {
      done_.fetch_add(1, std::memory_order_seq_cst);
      if (caller_sleeps_.load(std::memory_order_seq_cst)) wake_word(done_);
    }
  }
}

void WorkerPool::offer(unsigned width) {
  unsigned sleeping = 0;
  for (unsigned i = 1; i < width; ++i) {
    Slot& slot = slots_[i];
    slot.ticket.store(ticket_, std::memory_order_seq_cst);
    if (slot.sleeping.load(std::memory_order_seq_cst)) sleepers_[sleeping++].store(i, std::memory_order_relaxed);
  }
  wake_count_.store(sleeping, std::memory_order_release);
}

void WorkerPool::wake_some(unsigned most) {
  for (unsigned woken = 0; woken < most; ++woken) {
    unsigned next = wake_next_.load(std::memory_order_relaxed);
    do {
      // The count may still be 0 for a worker that arrives while the caller lists the sleepers.
      if (next >= wake_count_.load(std::memory_order_acquire)) return;
    } while (!wake_next_.compare_exchange_weak(next, next + 1, std::memory_order_acq_rel));
    wake_word(slots_[sleepers_[next].load(std::memory_order_relaxed)].ticket);
  }
}

void WorkerPool::wait_for_workers(IdleFn idle, void* ctx) {
  auto done = [this] { return active_.load(std::memory_order_seq_cst) == 0; };
  if (spin_until(done)) return;
  for (;;) {
    const std::uint32_t seen = done_.load(std::memory_order_seq_cst);
    caller_sleeps_.store(true, std::memory_order_seq_cst);
    if (done()) break;
    // A chunk may run long (or forever, until it is stopped): the caller keeps looking for Ctrl-C.
    wait_word(done_, seen, idle ? kIdleCheckUs : 0);
    if (done()) break;
    if (idle) idle(ctx);
  }
  caller_sleeps_.store(false, std::memory_order_relaxed);
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

void WorkerPool::parallel_for(std::uint64_t count, std::uint64_t chunk, RangeFn fn, void* ctx, IdleFn idle,
                              unsigned width) {
  if (count == 0) return;
  chunk = std::max<std::uint64_t>(1, chunk);
  width = width == 0 ? size_ : std::min(width, size_);
  // No more participants than chunks: the rest would only wake to find nothing.
  width = static_cast<unsigned>(std::min<std::uint64_t>(width, (count + chunk - 1) / chunk));
  const std::unique_lock<std::timed_mutex> serial = take_job_lock();
  if (width <= 1) {
    fn(ctx, 0, count, 0);  // one chunk: involving workers would only add latency
    return;
  }
  Job job;
  job.fn = fn;
  job.ctx = ctx;
  job.chunk = chunk;
  job.parts = parts_.get();
  job.width = width;
  // Equal contiguous parts, the same for the same count and width on every call.
  for (unsigned p = 0; p < width; ++p) {
    parts_[p].next.store(count * p / width, std::memory_order_relaxed);
    parts_[p].end = count * (p + 1) / width;
  }
  ++ticket_;
  job_.store(&job, std::memory_order_seq_cst);
  offer(width);
  wake_some(kWakesEach);
  work_on(job, 0);
  job_.store(nullptr, std::memory_order_seq_cst);
  wait_for_workers(idle, ctx);
  // No one takes a wake-up any more (they take them only while in the job): the next job lists its own.
  wake_count_.store(0, std::memory_order_relaxed);
  wake_next_.store(0, std::memory_order_relaxed);
}

}  // namespace metalcall::cpu
