// The parent's side of the sandbox worker (see worker_link.hpp).
#include "backends/cpu/sandbox/worker_link.hpp"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <poll.h>
#include <sstream>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>

#include "backends/cpu/fork_guard.hpp"
#include "backends/cpu/sandbox/worker_spawn.hpp"
#include "core/interrupt.hpp"
#include "metalcall/interrupt.hpp"
#include "metalcall/errors.hpp"

namespace metalcall::cpu::sandbox {

namespace {

// How much longer a caller spins when it had to wake the worker: long enough for a
// woken worker's reply on an idle machine, so that this side is still running when it
// comes and the next request finds the worker spinning again; else each call could pay
// two wake-ups from then on. (On a machine with more busy processes than cores no spin
// is enough: a spinning process loses its core to the others.)
constexpr std::chrono::microseconds kWakeSpin{200};
// How often a sleeping caller looks at its stop flag and Ctrl-C.
constexpr int kPollMs = 20;
// How long a worker asked to stop may take to reply before it is killed: kernels
// stop between chunks of threadgroups, each at most ~50 µs of work once measured.
constexpr std::chrono::milliseconds kStopGrace{200};

std::string system_call_name(long number) {
  static const std::pair<long, const char*> names[] = {
      {SYS_openat, "openat"}, {SYS_execve, "execve"}, {SYS_execveat, "execveat"}, {SYS_clone, "clone"},
      {SYS_socket, "socket"}, {SYS_connect, "connect"}, {SYS_kill, "kill"}, {SYS_ptrace, "ptrace"},
      {SYS_newfstatat, "newfstatat"}, {SYS_statx, "statx"}, {SYS_unlinkat, "unlinkat"}, {SYS_mprotect, "mprotect"},
      {SYS_mmap, "mmap"}, {SYS_ioctl, "ioctl"}, {SYS_prctl, "prctl"}, {SYS_rt_sigaction, "rt_sigaction"},
      {SYS_getdents64, "getdents64"}, {SYS_bind, "bind"}, {SYS_memfd_create, "memfd_create"}, {SYS_exit, "exit"},
      {SYS_futex, "futex"},
#ifdef SYS_open
      {SYS_open, "open"}, {SYS_fork, "fork"}, {SYS_vfork, "vfork"}, {SYS_stat, "stat"}, {SYS_access, "access"},
#endif
#ifdef SYS_clone3
      {SYS_clone3, "clone3"},
#endif
  };
  for (const auto& [n, name] : names)
    if (n == number) return std::string(name) + ", #" + std::to_string(number);
  return "#" + std::to_string(number);
}

std::string signal_description(int signal) {
  switch (signal) {
    case SIGSEGV: return "crashed with a segmentation fault (an access outside its memory, or a stack overflow)";
    case SIGBUS: return "crashed with a bus error";
    case SIGFPE: return "crashed with an arithmetic fault";
    case SIGILL: return "crashed with an illegal instruction";
    case SIGABRT: return "aborted";
    case SIGSYS: return "made a system call the sandbox forbids";
    case SIGKILL: return "was killed (out of memory?)";
    default: return std::string("was ended by signal ") + std::to_string(signal) + " (" + strsignal(signal) + ")";
  }
}

// The worker's text, made safe to show: printable ASCII, newlines and tabs.
std::string printable(const unsigned char* p, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += (p[i] >= 0x20 && p[i] < 0x7f) || p[i] == '\n' || p[i] == '\t' ? char(p[i]) : '?';
  return out;
}

// How long a request that runs no kernel may go unanswered (WorkerLink::bookkeeping).
double reply_timeout_seconds() {
  const char* text = std::getenv("METALCALL_SANDBOX_REPLY_TIMEOUT");
  if (!text || !*text) return 30.0;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (*end != '\0' || !(value > 0) || value > 1e6) {
    throw DeviceError(std::string("[cpu sandbox] METALCALL_SANDBOX_REPLY_TIMEOUT='") + text +
                      "' is not a number of seconds (more than 0, at most 1e6)");
  }
  return value;
}

}  // namespace

WorkerLink::WorkerLink(std::shared_ptr<SharedArena> arena) : arena_(std::move(arena)) {
  reset_on_fork(this, [](void* self) { static_cast<WorkerLink*>(self)->reset_after_fork(); });
}

WorkerLink::~WorkerLink() {
  forget_on_fork(this);
  if (pid_ > 0) kill_worker();
  close_worker();
}

void WorkerLink::reset_after_fork() {
  // The worker is the parent's: this process forgets it (and must not kill it). The arena
  // is the parent's too (shared_arena.cpp makes this child's copy private): no worker of
  // this child could see the child's Buffers, so the child runs no kernels.
  new (&mutex_) std::mutex;
  new (&forget_mutex_) std::mutex;
  pid_ = 0;
  if (socket_ >= 0) close(socket_);
  socket_ = -1;
  if (control_) munmap(control_, kControlBytes);
  control_ = nullptr;
  forked_ = true;
}

void WorkerLink::ensure_worker() {
  if (forked_) {
    throw DeviceError("[cpu sandbox] this sandboxed device was opened before os.fork(): a forked child cannot run "
                      "its kernels; use multiprocessing's 'spawn' or 'forkserver' start method");
  }
  if (pid_ > 0) return;
  const std::string executable = worker_executable();
  if (executable.empty()) {
    throw DeviceError("[cpu sandbox] the worker executable metalcall-sandbox-worker is not installed beside the "
                      "metalcall library; reinstall metalcall or set METALCALL_SANDBOX_WORKER to its path");
  }
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    throw DeviceError(std::string("[cpu sandbox] cannot create the worker's socket: ") + std::strerror(errno));
  }
  const int control_fd = memfd_create("metalcall-sandbox-control", MFD_CLOEXEC);
  void* page = MAP_FAILED;
  if (control_fd >= 0 && ftruncate(control_fd, kControlBytes) == 0)
    page = mmap(nullptr, kControlBytes, PROT_READ | PROT_WRITE, MAP_SHARED, control_fd, 0);
  if (page == MAP_FAILED) {
    const int error = errno;
    close(pair[0]);
    close(pair[1]);
    if (control_fd >= 0) close(control_fd);
    throw DeviceError(std::string("[cpu sandbox] cannot create the worker's control page: ") + std::strerror(error));
  }
  control_ = new (page) ControlPage();
  socket_ = pair[0];
  try {
    pid_ = spawn_worker(executable, pair[1], control_fd, arena_->fd());
  } catch (...) {
    close(pair[1]);
    close(control_fd);
    close_worker();
    throw;
  }
  close(pair[1]);
  close(control_fd);
  seq_ = 0;
  modules_.clear();
  programs_.clear();
  {
    // Releases queued for the last worker mean nothing to this one.
    std::lock_guard<std::mutex> lock(forget_mutex_);
    released_modules_.clear();
    released_programs_.clear();
  }
}

void WorkerLink::attach(int fd) {
  char byte = 'f';
  iovec io{&byte, 1};
  alignas(cmsghdr) char space[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &io;
  msg.msg_iovlen = 1;
  msg.msg_control = space;
  msg.msg_controllen = sizeof space;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  // Never blocking: a worker that reads nothing (a hostile kernel) could fill the socket.
  ssize_t n;
  do n = sendmsg(socket_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  if (n != 1) {
    kill_worker();
    lost(false, n < 0 && errno == EAGAIN ? "stopped reading its socket" : "");
  }
}

Reply WorkerLink::exchange(std::size_t request_bytes, const std::atomic<bool>* cancel, bool interruptible,
                           std::chrono::microseconds spin, std::chrono::steady_clock::time_point deadline) {
  const std::uint32_t seq = ++seq_;
  control_->cancel.store(false, std::memory_order_relaxed);
  control_->request_bytes.store(static_cast<std::uint32_t>(request_bytes), std::memory_order_relaxed);
  control_->request_seq.store(seq, std::memory_order_seq_cst);
  if (control_->worker_sleeping.load(std::memory_order_seq_cst)) {
    // Never blocking: a full socket already holds wake records for the worker.
    const char byte = 'w';
    if (send(socket_, &byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1 && errno != EAGAIN && errno != EINTR) lost(false);
    spin += kWakeSpin;
  }
  auto replied = [&] { return control_->reply_seq.load(std::memory_order_acquire) == seq; };
  const auto spin_end = std::chrono::steady_clock::now() + spin;
  bool done = false;
  for (unsigned turn = 1; !(done = replied()); ++turn) {
    pause_or_yield(turn);
    if (turn % 64 == 0 && std::chrono::steady_clock::now() > spin_end) break;
  }
  bool stopping = false;
  std::chrono::steady_clock::time_point stop_deadline;
  while (!done) {
    // The worker stores reply_seq, then reads parent_sleeping: one of us sees the other.
    control_->parent_sleeping.store(1, std::memory_order_seq_cst);
    if ((done = control_->reply_seq.load(std::memory_order_seq_cst) == seq)) break;
    pollfd p{socket_, POLLIN, 0};
    const int ready = poll(&p, 1, kPollMs);
    if (ready > 0) {
      if (p.revents & (POLLHUP | POLLERR | POLLNVAL)) lost(false);
      char bytes[64];
      // Wake records: their content does not matter. A bounded drain, so that a worker
      // sending without end cannot keep this loop from its checks.
      for (int k = 0; k < 64; ++k) {
        const ssize_t n = recv(socket_, bytes, sizeof bytes, MSG_DONTWAIT);
        if (n == 0) lost(false);
        if (n < 0) break;
      }
    }
    const bool asked = (cancel && cancel->load(std::memory_order_relaxed)) || (interruptible && interrupt_requested()) ||
                       std::chrono::steady_clock::now() > deadline;
    if (asked && !stopping) {
      stopping = true;
      control_->cancel.store(true, std::memory_order_relaxed);  // the worker stops between chunks
      stop_deadline = std::chrono::steady_clock::now() + kStopGrace;
    }
    if (stopping && std::chrono::steady_clock::now() > stop_deadline && !replied()) {
      kill_worker();
      lost(true);
    }
  }
  control_->parent_sleeping.store(0, std::memory_order_relaxed);
  // Copied out before reading: the worker may still be writing the page.
  const std::size_t bytes = std::min<std::size_t>(control_->reply_bytes.load(std::memory_order_acquire), kReplyBytes);
  std::vector<unsigned char> copy(control_->reply, control_->reply + bytes);
  MessageReader reader(copy.data(), copy.size());
  Reply reply;
  const auto status = reader.get<std::uint32_t>();
  reply.seconds = reader.get<double>();
  const std::uint32_t message_bytes = reader.get<std::uint32_t>();
  const unsigned char* message = message_bytes <= 2048 ? reader.take(message_bytes) : nullptr;
  if (!reader.ok() || status > static_cast<std::uint32_t>(Status::device_error) || !message) {
    kill_worker();
    lost(false, "sent a malformed reply");
  }
  reply.status = static_cast<Status>(status);
  reply.message = printable(message, message_bytes);
  if (!std::isfinite(reply.seconds) || reply.seconds < 0) reply.seconds = std::nan("");
  const std::size_t used = 4 + 8 + 4 + message_bytes;
  reply.payload.assign(copy.begin() + static_cast<std::ptrdiff_t>(used), copy.end());
  return reply;
}

Reply WorkerLink::bookkeeping(std::size_t request_bytes) {
  const double limit = reply_timeout_seconds();
  try {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                                 std::chrono::duration<double>(limit));
    return exchange(request_bytes, nullptr, true, kDefaultSpin, deadline);
  } catch (WorkerLost& lost) {
    if (!lost.stopped) throw;
    if (interrupt_check_installed() && interrupt_requested()) throw Interrupted();
    lost.stopped = false;
    std::ostringstream why;
    why << "did not answer within " << limit << " s (a kernel that took its process over, or a machine far too "
        << "busy: METALCALL_SANDBOX_REPLY_TIMEOUT) and was ended";
    lost.why = why.str();
    throw;
  }
}

void WorkerLink::forget_module(std::uint64_t id) {
  std::lock_guard<std::mutex> lock(forget_mutex_);
  released_modules_.push_back(id);
}

void WorkerLink::forget_program(std::uint64_t id) {
  std::lock_guard<std::mutex> lock(forget_mutex_);
  released_programs_.push_back(id);
}

void WorkerLink::send_releases() {
  std::vector<std::uint64_t> modules, programs;
  {
    std::lock_guard<std::mutex> lock(forget_mutex_);
    modules.swap(released_modules_);
    programs.swap(released_programs_);
  }
  std::vector<std::uint64_t> loaded_modules, loaded_programs;
  for (auto id : programs)
    if (programs_.erase(id)) loaded_programs.push_back(id);
  for (auto id : modules)
    if (modules_.erase(id)) loaded_modules.push_back(id);
  if (loaded_modules.empty() && loaded_programs.empty()) return;
  MessageWriter w = request();
  w.put(Op::release);
  w.put(static_cast<std::uint32_t>(loaded_programs.size()));
  for (auto id : loaded_programs) w.put(id);
  w.put(static_cast<std::uint32_t>(loaded_modules.size()));
  for (auto id : loaded_modules) w.put(id);
  (void)bookkeeping(w.used());
}

void WorkerLink::kill_worker() {
  if (pid_ > 0) kill(pid_, SIGKILL);
}

std::string WorkerLink::reap() {
  int status = 0;
  pid_t got;
  do got = waitpid(pid_, &status, 0);
  while (got < 0 && errno == EINTR);
  std::string why;
  if (got != pid_) {
    why = "ended (its exit status was collected elsewhere)";
  } else if (WIFSIGNALED(status)) {
    why = signal_description(WTERMSIG(status));
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == kExitViolation) {
    const std::uint32_t call = control_->violation.load(std::memory_order_relaxed);
    why = "made a system call the sandbox forbids" + (call ? " (" + system_call_name(long(call) - 1) + ")" : "");
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == kExitStartFailed) {
    const std::size_t bytes = std::min<std::size_t>(control_->reply_bytes.load(), kReplyBytes);
    MessageReader reader(control_->reply, bytes);
    (void)reader.get<std::uint32_t>();
    (void)reader.get<double>();
    const auto n = reader.get<std::uint32_t>();
    const unsigned char* text = n <= 2048 ? reader.take(n) : nullptr;
    why = "could not start: " + (text ? printable(text, n) : std::string("no reason given"));
  } else if (WIFEXITED(status)) {
    why = "ended unexpectedly (exit status " + std::to_string(WEXITSTATUS(status)) + ")";
  } else {
    why = "ended unexpectedly";
  }
  pid_ = 0;
  close_worker();
  return why;
}

void WorkerLink::lost(bool stopped, const std::string& why) {
  WorkerLost error;
  error.stopped = stopped;
  error.why = reap();
  if (stopped) error.why = "was stopped";
  if (!why.empty()) error.why = why;
  throw error;
}

void WorkerLink::close_worker() {
  if (socket_ >= 0) close(socket_);
  socket_ = -1;
  if (control_) munmap(control_, kControlBytes);
  control_ = nullptr;
  modules_.clear();
  programs_.clear();
}

}  // namespace metalcall::cpu::sandbox
