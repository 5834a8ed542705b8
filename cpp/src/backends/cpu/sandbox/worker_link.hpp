// The parent's side of the sandbox worker: starts the worker process (and a new one
// after it died or was stopped), sends it requests through the control page, waits
// for the replies (a stop request, Ctrl-C or the worker's death ends the wait), and
// says why a worker ended. What is loaded in the current worker is tracked here, so
// that a new worker is given the modules and programs again before their next call.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <sys/types.h>
#include <vector>

#include "backends/cpu/sandbox/sandbox_protocol.hpp"
#include "backends/cpu/sandbox/shared_arena.hpp"

namespace metalcall::cpu::sandbox {

/** The worker ended (crashed, broke the filter, was stopped) before it replied. */
struct WorkerLost {
  std::string why;       // "crashed with a segmentation fault", ...
  bool stopped = false;  // stopped by us: cancelled, interrupted or out of time
};

/** A reply, copied out of the control page and checked. */
struct Reply {
  Status status = Status::ok;
  double seconds = 0;
  std::string message;                  // printable text, at most 2 KiB
  std::vector<unsigned char> payload;   // what followed (untrusted: read with a MessageReader)
};

class WorkerLink {
 public:
  explicit WorkerLink(std::shared_ptr<SharedArena> arena);
  ~WorkerLink();
  WorkerLink(const WorkerLink&) = delete;
  WorkerLink& operator=(const WorkerLink&) = delete;

  /** One conversation at a time: every call below except forget_*() needs it held. */
  std::mutex& mutex() { return mutex_; }

  /** Starts a worker if none runs. Throws DeviceError when none can start. */
  void ensure_worker();
  /** The request area (after ensure_worker). */
  MessageWriter request() { return MessageWriter(control_->request, kRequestBytes); }
  /** Sends `fd` to the worker for the next request (which takes it). Throws WorkerLost. */
  void attach(int fd);
  /**
   * Publishes the request written and waits for its reply: spinning for up to `spin`
   * (a reply within it costs no system call on either side), then asleep. When `cancel`
   * becomes true or (if `interruptible`) the thread's InterruptScope fires, asks the
   * worker to stop, and stops the worker itself if it has not replied soon after; the same
   * at `deadline` (a device's kernel_timeout; none by default). Throws WorkerLost.
   */
  Reply exchange(std::size_t request_bytes, const std::atomic<bool>* cancel, bool interruptible,
                 std::chrono::microseconds spin = kDefaultSpin,
                 std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());
  /**
   * exchange() for a request that runs no kernel (start-up, load, prepare, define, release).
   * A worker that a kernel took over may never answer it: the wait is bounded (30 s, far
   * longer than loading the largest kernel object takes on a busy machine;
   * METALCALL_SANDBOX_REPLY_TIMEOUT seconds), then the worker is ended (WorkerLost saying
   * so), and Ctrl-C reaches it (Interrupted, inside an InterruptScope). DeviceError for a
   * malformed METALCALL_SANDBOX_REPLY_TIMEOUT.
   */
  Reply bookkeeping(std::size_t request_bytes);
  /** A reply usually comes within this when the worker is spinning or wakes at once. */
  static constexpr std::chrono::microseconds kDefaultSpin{100};

  // What the current worker holds (a new worker holds nothing).
  bool has_module(std::uint64_t id) const { return modules_.count(id) != 0; }
  bool has_program(std::uint64_t id) const { return programs_.count(id) != 0; }
  void add_module(std::uint64_t id) { modules_.insert(id); }
  void add_program(std::uint64_t id) { programs_.insert(id); }
  /** Sends the releases queued by forget_*() since the last time, if any. Throws WorkerLost. */
  void send_releases();

  /** Called when a module or program is dropped, from any thread, without the lock. */
  void forget_module(std::uint64_t id);
  void forget_program(std::uint64_t id);

 private:
  /** Waits for the dead (or killed) worker and returns why it ended; the link has no worker after. */
  std::string reap();
  /** Reaps the worker and throws WorkerLost: why it ended, or `why` when given (it was killed for that). */
  [[noreturn]] void lost(bool stopped, const std::string& why = "");
  void kill_worker();
  void close_worker();
  void reset_after_fork();

  std::shared_ptr<SharedArena> arena_;
  std::mutex mutex_;
  pid_t pid_ = 0;
  int socket_ = -1;
  ControlPage* control_ = nullptr;
  std::uint32_t seq_ = 0;
  bool forked_ = false;  // this is a forked child of the process that opened the device
  std::set<std::uint64_t> modules_, programs_;
  std::mutex forget_mutex_;  // the release queues: dropped objects may go on any thread
  std::vector<std::uint64_t> released_modules_, released_programs_;
};

}  // namespace metalcall::cpu::sandbox
