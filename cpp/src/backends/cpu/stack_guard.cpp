// The in-process CPU device's stack guard (see stack_guard.hpp).
#include "backends/cpu/stack_guard.hpp"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>

#include "backends/cpu/fiber.hpp"
#include "backends/cpu/kernel_stop.hpp"

#if defined(__linux__) || defined(__APPLE__)
#include <pthread.h>
#include <signal.h>
#define METALCALL_STACK_GUARD 1
#else
#define METALCALL_STACK_GUARD 0
#endif

namespace metalcall::cpu {

namespace {

std::atomic<bool> g_enabled{false};

}  // namespace

void enable_stack_guard() {
  // METALCALL_STACK_GUARD=0: a host program that owns SIGSEGV (a JVM, its own crash handler
  // that must come first) keeps it, and an overflow ends the process as it would without us.
  static const bool wanted = [] {
    const char* env = std::getenv("METALCALL_STACK_GUARD");
    return !(env && env[0] == '0' && env[1] == '\0');
  }();
  if (wanted) g_enabled.store(true, std::memory_order_release);
}
bool stack_guard_enabled() { return g_enabled.load(std::memory_order_acquire); }

#if METALCALL_STACK_GUARD

namespace {

// The alternate signal stack: the handler runs there, since the thread's own stack is full.
constexpr std::size_t kAltStackBytes = std::size_t(64) << 10;
// Below a thread's stack: its guard page, and for the main thread the gap the kernel keeps
// below the stack's growth limit. A fault this far below the stack's low end, or in its
// lowest page, is the stack running out (-fstack-clash-protection probes each page a
// large frame takes, so the first fault is next to the stack's end).
constexpr std::uintptr_t kBelowStack = std::uintptr_t(1) << 20;
constexpr std::uintptr_t kLowestPage = 4096;

struct ThreadGuard {
  bool ready = false;
  void* alt_stack = nullptr;  // ours, when the thread had none
  std::uintptr_t low = 0;     // the thread's own stack: its lowest usable address
  ~ThreadGuard() {
    if (!alt_stack) return;
    stack_t current{};
    if (sigaltstack(nullptr, &current) == 0 && current.ss_sp == alt_stack) {
      stack_t off{};
      off.ss_flags = SS_DISABLE;
      sigaltstack(&off, nullptr);
    }
    std::free(alt_stack);
  }
};
thread_local ThreadGuard t_guard;

// The process's handler before ours: every other fault goes there. Published whole through an
// atomic pointer, as a fault on one thread may read it while another thread installs ours again
// (keep_stack_guard_first); each record is kept for the process's life (one per handler that
// displaced ours, which only happens a few times).
std::atomic<const struct sigaction*> g_previous{nullptr};
std::atomic<bool> g_installed{false};
std::mutex g_install_mutex;  // installs and reclaims, one at a time
// Set while this thread is in the handler we chain to: one that gives the fault back to us
// (restores its previous handler, ours, and raises again) must not loop between the two.
thread_local bool t_in_previous = false;

bool near_stack_end(std::uintptr_t address, std::uintptr_t low) {
  return low != 0 && address + kBelowStack >= low && address < low + kLowestPage;
}

bool is_stack_overflow(const void* fault) {
  const auto address = reinterpret_cast<std::uintptr_t>(fault);
  if (const FiberGroup* group = FiberGroup::current()) {
    const std::uintptr_t fiber_low = reinterpret_cast<std::uintptr_t>(group->running_stack_low());
    if (fiber_low && address + kLowestPage >= fiber_low && address < fiber_low + kLowestPage) return true;
  }
  return near_stack_end(address, t_guard.low);
}

void restore_default(int sig) {
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  sigaction(sig, &fallback, nullptr);
}

void call_previous(int sig, siginfo_t* info, void* context) {
  const struct sigaction* previous = g_previous.load(std::memory_order_acquire);
  if (previous && (previous->sa_flags & SA_SIGINFO)) {
    previous->sa_sigaction(sig, info, context);
  } else if (!previous || previous->sa_handler == SIG_DFL || previous->sa_handler == SIG_IGN) {
    restore_default(sig);  // the default action: the faulting instruction faults again on return
  } else {
    previous->sa_handler(sig);
  }
}

bool same_handler(const struct sigaction& a, const struct sigaction& b) {
  const bool info = (a.sa_flags & SA_SIGINFO) != 0;
  return info == ((b.sa_flags & SA_SIGINFO) != 0) &&
         (info ? a.sa_sigaction == b.sa_sigaction : a.sa_handler == b.sa_handler);
}

void on_fault(int sig, siginfo_t* info, void* context) {
  if (t_in_previous) {  // given back by the handler we chained to: the default action ends the process
    restore_default(sig);
    return;
  }
  if (in_kernel_code() && is_stack_overflow(info->si_addr)) {
    stop_running_kernel(
        "it overflowed its stack: recursion, which MSL does not allow (here perhaps through an operator, a "
        "constructor, a conversion or a function object, which the front end cannot follow), or frames too large");
  }
  t_in_previous = true;
  call_previous(sig, info, context);
  t_in_previous = false;
}

bool ours_is_first() {
  struct sigaction current {};
  return sigaction(SIGSEGV, nullptr, &current) == 0 && (current.sa_flags & SA_SIGINFO) &&
         current.sa_sigaction == on_fault;
}

void install_handler() {
  std::lock_guard<std::mutex> lock(g_install_mutex);
  if (g_installed.load(std::memory_order_acquire) && ours_is_first()) return;
  struct sigaction ours {};
  ours.sa_sigaction = on_fault;
  // On the alternate stack; SIGSEGV not blocked while it runs, since it leaves by a longjmp
  // that restores no signal mask (RunControl::run).
  ours.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&ours.sa_mask);
  struct sigaction previous {};
  if (sigaction(SIGSEGV, &ours, &previous) != 0) return;
  const struct sigaction* known = g_previous.load(std::memory_order_acquire);
  if (!known || !same_handler(*known, previous)) g_previous.store(new struct sigaction(previous), std::memory_order_release);
  g_installed.store(true, std::memory_order_release);
}

}  // namespace

void keep_stack_guard_first() {
  if (g_installed.load(std::memory_order_acquire) && !ours_is_first()) install_handler();
}

void guard_this_thread() {
  if (t_guard.ready || !stack_guard_enabled()) return;
  static std::once_flag installed;
  std::call_once(installed, install_handler);
  t_guard.ready = true;
  stack_t current{};
  if (sigaltstack(nullptr, &current) == 0 && ((current.ss_flags & SS_DISABLE) || current.ss_size < kAltStackBytes / 4)) {
    void* memory = std::malloc(kAltStackBytes);
    stack_t alt{};
    alt.ss_sp = memory;
    alt.ss_size = kAltStackBytes;
    if (memory && sigaltstack(&alt, nullptr) == 0) t_guard.alt_stack = memory;
    else std::free(memory);
  }
#if defined(__linux__)
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* low = nullptr;
    std::size_t size = 0;
    if (pthread_attr_getstack(&attr, &low, &size) == 0) t_guard.low = reinterpret_cast<std::uintptr_t>(low);
    pthread_attr_destroy(&attr);
  }
#else
  const pthread_t self = pthread_self();
  t_guard.low = reinterpret_cast<std::uintptr_t>(pthread_get_stackaddr_np(self)) - pthread_get_stacksize_np(self);
#endif
}

#else

void guard_this_thread() {}
void keep_stack_guard_first() {}

#endif

}  // namespace metalcall::cpu
