// Stopping CPU kernels while they run (see kernel_stop.hpp).
#include "backends/cpu/kernel_stop.hpp"

#include <setjmp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <condition_variable>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "backends/cpu/fiber.hpp"
#include "backends/cpu/fork_guard.hpp"
#include "backends/cpu/stack_guard.hpp"
#include "core/backend.hpp"
#include "core/interrupt.hpp"

namespace metalcall::cpu {

namespace {

constexpr std::chrono::milliseconds kWatchPeriod{10};
// After this long with nothing to watch, the watchdog sleeps until a dispatch wakes it:
// calls that come back to back cost no wake-up each.
constexpr std::chrono::seconds kWatchdogRest{1};

// The stop word the kernels read (counted reasons to look), and the pending tick, on a
// line of their own: kernels on every core read the word on every loop iteration.
struct alignas(64) StopWord {
  unsigned word = 0;
  bool tick = false;
};
StopWord g_stop;

void raise_word() { __atomic_fetch_add(&g_stop.word, 1u, __ATOMIC_SEQ_CST); }
void lower_word() { __atomic_fetch_sub(&g_stop.word, 1u, __ATOMIC_SEQ_CST); }

void raise_tick() {
  if (!__atomic_exchange_n(&g_stop.tick, true, __ATOMIC_SEQ_CST)) raise_word();
}
// The thread with an InterruptScope takes the tick: true if there was one.
bool take_tick() {
  if (!__atomic_load_n(&g_stop.tick, __ATOMIC_RELAXED) || !__atomic_exchange_n(&g_stop.tick, false, __ATOMIC_SEQ_CST))
    return false;
  lower_word();
  return true;
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Set by stop_all_kernels: every dispatch stops, with this reason.
std::atomic<const char*> g_stop_everything{nullptr};

// The dispatch whose kernel code this thread runs, and where a stop leaves to.
// One thread-local object (one TLS look-up per chunk, not one per variable: this library is
// loaded with dlopen, so each access of a thread_local is a call to __tls_get_addr).
struct ThreadRun {
  RunControl* run = nullptr;
  sigjmp_buf* exit = nullptr;
  bool guarded = false;  // guard_this_thread() has set this thread up
};
thread_local ThreadRun t_thread;

// Never destroyed: its thread runs until the process ends.
struct Watchdog {
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<RunControl*> runs;
  bool started = false;
  bool running = false;  // the thread has started (glibc's thread start-up system calls done)
  bool resting = false;  // waiting without a timeout: a new run must wake it
};

Watchdog& watchdog() {
  static Watchdog* w = [] {
    auto* created = new Watchdog;
    // A forked child has no watchdog thread, and the parent's runs are not its own.
    reset_on_fork(created, [](void* self) {
      auto* child = static_cast<Watchdog*>(self);
      new (&child->mutex) std::mutex;
      new (&child->cv) std::condition_variable;
      new (&child->runs) std::vector<RunControl*>;  // the parent's leaks
      child->started = false;
      child->running = false;
      child->resting = false;
      g_stop.word = 0;
      g_stop.tick = false;
    });
    return created;
  }();
  return *w;
}

void watchdog_loop() {
  Watchdog& w = watchdog();
  std::unique_lock<std::mutex> lock(w.mutex);
  w.running = true;
  w.cv.notify_all();  // start_stop_watchdog() waits for this
  auto last_busy = std::chrono::steady_clock::now();
  for (;;) {
    if (w.runs.empty() && std::chrono::steady_clock::now() - last_busy > kWatchdogRest) {
      w.resting = true;
      w.cv.wait(lock, [&] { return !w.runs.empty(); });
      w.resting = false;
    }
    w.cv.wait_for(lock, kWatchPeriod);
    const std::int64_t now = now_ns();
    bool scoped = false;
    for (RunControl* run : w.runs) {
      run->watch(now);
      scoped = scoped || (run->scoped() && !run->stopped());
    }
    // The thread that may run Python's signal handlers looks for Ctrl-C at its next loop.
    if (scoped) raise_tick();
    if (!w.runs.empty()) last_busy = std::chrono::steady_clock::now();
  }
}

// The hook a kernel calls when the stop word is not 0.
void stop_check() {
  RunControl* run = t_thread.run;
  if (!run) return;
  if (interrupt_check_installed() && take_tick() && interrupt_requested()) run->stop("interrupted");
  if (run->stopped()) leave_kernel();
}

const volatile unsigned* stop_word_address() { return &g_stop.word; }

}  // namespace

metalcall_cpu_stop stop_hooks() { return {stop_word_address(), &stop_check}; }

void stop_all_kernels(const char* reason) {
  g_stop_everything.store(reason, std::memory_order_release);
  Watchdog& w = watchdog();
  std::lock_guard<std::mutex> lock(w.mutex);
  for (RunControl* run : w.runs) run->stop(reason);
}

void leave_kernel() {
  // Inside a fiber: back to the group's scheduler first (FiberGroup::abandon); the group's
  // run then returns to worker_state's run_group, which calls this again from the worker's stack.
  if (FiberGroup* group = FiberGroup::current()) group->abandon();
  siglongjmp(*t_thread.exit, 1);
}

bool in_kernel_code() { return t_thread.run != nullptr && t_thread.exit != nullptr; }

void stop_running_kernel(const char* reason) {
  t_thread.run->stop(reason);
  leave_kernel();
}

RunControl::RunControl(const StopRequest& stop, bool in_loops)
    : request_(stop), in_loops_(in_loops), watched_(in_loops || stop.timeout_seconds > 0),
      scoped_(interrupt_check_installed() && in_loops) {}

RunControl::~RunControl() {
  if (registered_) {
    Watchdog& w = watchdog();
    std::lock_guard<std::mutex> lock(w.mutex);
    w.runs.erase(std::find(w.runs.begin(), w.runs.end(), this));
  }
  if (raised_.load(std::memory_order_acquire)) lower_word();
  if (scoped_) take_tick();
}

void start_stop_watchdog() {
  Watchdog& w = watchdog();
  std::unique_lock<std::mutex> lock(w.mutex);
  if (!w.started) {
    w.started = true;
    std::thread(watchdog_loop).detach();
  }
  // Returns once the thread runs: a new thread's first system calls (glibc's rseq and robust
  // list registration) must come before the sandbox worker installs its filter.
  w.cv.wait(lock, [&] { return w.running; });
}

void RunControl::start() {
  // Nothing to start (no deadline, nothing to watch: the common tiny call): no locked exchange.
  if (!watched_ && request_.timeout_seconds <= 0) return;
  if (started_.load(std::memory_order_acquire) || started_.exchange(true, std::memory_order_acq_rel)) return;
  if (request_.timeout_seconds > 0)
    deadline_ns_.store(now_ns() + static_cast<std::int64_t>(request_.timeout_seconds * 1e9));
  if (!watched_) return;
  Watchdog& w = watchdog();
  bool wake;
  {
    std::lock_guard<std::mutex> lock(w.mutex);
    w.runs.push_back(this);
    registered_ = true;
    wake = w.resting;
    if (!w.started) {
      w.started = true;
      std::thread(watchdog_loop).detach();
    }
  }
  if (wake) w.cv.notify_one();
}

void RunControl::stop(const std::string& reason) {
  if (reason_claimed_.exchange(true, std::memory_order_acq_rel)) return;
  reason_ = reason;
  stopped_.store(true, std::memory_order_release);
  // Kernel code inside chunks looks at the word; without loops it cannot, and chunk starts look at stopped_.
  if (in_loops_ && !raised_.exchange(true, std::memory_order_acq_rel)) raise_word();
}

void RunControl::watch(std::int64_t now) {
  if (stopped()) return;
  if (const char* all = g_stop_everything.load(std::memory_order_acquire)) stop(all);
  if (request_.cancel && request_.cancel->load(std::memory_order_acquire)) {
    const char* why = request_.completion ? request_.completion->cancel_reason() : nullptr;
    stop(why ? why : "cancelled");
  } else if (const std::int64_t deadline = deadline_ns_.load(); deadline && now >= deadline) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", request_.timeout_seconds);
    stop(std::string("it ran longer than the device's kernel_timeout of ") + seconds + " s");
  }
}

bool RunControl::stopping() {
  start();
  if (stopped()) return true;
  if (const char* all = g_stop_everything.load(std::memory_order_acquire)) stop(all);
  if (scoped_ && interrupt_check_installed()) take_tick();
  if (request_.cancel && request_.cancel->load(std::memory_order_relaxed)) {
    watch(now_ns());
  } else if (interrupt_requested()) {  // the calling thread's InterruptScope; other threads have none
    stop("interrupted");
  } else if (deadline_ns_.load(std::memory_order_relaxed)) {
    watch(now_ns());
  }
  return stopped();
}

void RunControl::idle() {
  if (interrupt_check_installed()) {
    take_tick();
    if (interrupt_requested()) stop("interrupted");
  }
}

namespace {

// Runs the entry where a stop (or a stack overflow) can leave it: false if it left. Apart from
// RunControl::run, so that `state` is a parameter: around sigsetjmp, which returns twice, the
// compiler would look the thread_local up again (a call to __tls_get_addr) for each use.
#if defined(__GNUC__) && !defined(__clang__)
#define METALCALL_KEEP_PARAMETERS __attribute__((noinline, noclone))  // no copy with `state` made a constant again
#else
#define METALCALL_KEEP_PARAMETERS __attribute__((noinline))
#endif
METALCALL_KEEP_PARAMETERS bool run_leavable(ThreadRun& state, RunControl* run, metalcall_cpu_entry entry,
                                    const metalcall_cpu_launch* launch, std::uint64_t begin, std::uint64_t end,
                                    const metalcall_cpu_worker* table) {
  RunControl* const outer_run = state.run;
  sigjmp_buf* const outer_exit = state.exit;
  sigjmp_buf here;
  state.run = run;
  state.exit = &here;
  // No signal mask saved or restored (0): a longjmp from stop_check, on this thread's stack.
  const bool finished = sigsetjmp(here, 0) == 0;
  if (finished) entry(launch, begin, end, table);
  state.run = outer_run;
  state.exit = outer_exit;
  return finished;
}

}  // namespace

bool RunControl::run(metalcall_cpu_entry entry, const metalcall_cpu_launch* launch, std::uint64_t begin,
                     std::uint64_t end, const metalcall_cpu_worker* table) {
  ThreadRun& state = t_thread;
  if (!state.guarded) {
    guard_this_thread();
    state.guarded = stack_guard_enabled();
  }
  return run_leavable(state, this, entry, launch, begin, end, table);
}

}  // namespace metalcall::cpu
