// The CUDA backend's queue: one stream per device. A call returns once its launch
// is enqueued. Whoever waits on the call (Completion.wait, a dropped Completion, a
// hazard wait on a buffer, synchronize) synchronises on an end event at or after
// it on its own thread — recording one then if none exists — and finishes that
// submission and every earlier one (the stream is in order). Every 32nd call
// records an end event at submission, so finished work is reaped without waiters.
// Foreign host memory is staged through device memory around the call: large
// arguments through pinned host chunks (cuda_host_staging), the copy back done
// inside submit.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_device.hpp"
#include "backends/cuda/cuda_host_staging.hpp"
#include "backends/cuda/cuda_stop.hpp"
#include "core/backend.hpp"

namespace metalcall::cuda {

class CudaQueue : public CompletionDriver {
 public:
  /** `timing`: time every submission with events (else batches only); `kernel_timeout` > 0: seconds
   *  a submission may take from its call before it is stopped. */
  CudaQueue(CUcontext ctx, const DeviceProps& props, bool timing, double kernel_timeout = 0);
  /** The word this queue's kernels read to stop (modules loaded for its device point at it). */
  StopWord& stop_word() { return stop_word_; }

  void submit(std::vector<DispatchCommand>&& commands, const std::shared_ptr<CompletionState>& completion);
  /** A CUDA graph of `commands` (no host memory), captured from this stream; null if capture fails. */
  std::shared_ptr<BackendGraph> capture(const std::vector<DispatchCommand>& commands);
  /** Launches a captured graph as one timed submission. */
  void replay(const std::shared_ptr<BackendGraph>& graph, const std::shared_ptr<CompletionState>& completion);
  void synchronize();
  /** The stream every submission runs on (DLPack's `stream` for imports). A blocking stream: work
   *  queued on the legacy default stream (torch's and CuPy's default streams) comes before later
   *  work on it, and later work there after it, with no event (CUDA's implicit synchronisation). */
  CUstream stream() const { return stream_; }
  /** Copies `n` bytes after all earlier work on the stream (any pointers unified addressing knows); returns when done. */
  void copy(void* dst, const void* src, std::size_t n);
  /**
   * Copies `n` bytes at `src` into `pinned` (page-locked host memory) behind `use` on the stream,
   * and waits for the copy: one wait where waiting for `use` and then copying took two. False,
   * copying nothing, unless `use` was launched on this queue (a batch being committed may be
   * marked submitted before its launch). Interrupted: the copy may still write `pinned` later.
   */
  bool read_after(const CompletionState& use, void* pinned, CUdeviceptr src, std::size_t n);
  /** Later work on the stream waits for what is queued now on `other` (an event; the host does not wait). */
  void wait_for_stream(CUstream other);

  void poll(CompletionState& state) override { reap(state.ticket()); }
  void wait(CompletionState& state) override { wait_for(state.ticket()); }
  /** Stops `state`'s submission (and the earlier ones: the stop word is a ticket, cuda_stop.hpp). */
  void cancel(CompletionState& state) override;
  /** Stops what was submitted, and fails later submissions at once (Device::stop_all_work). */
  void stop_all(const char* reason);

 private:
  /** Device memory that stages foreign host memory for one call. */
  struct Staging {
    CUdeviceptr ptr = 0;
    std::size_t bytes = 0;
  };
  struct Submission {
    std::uint64_t ticket = 0;
    CUevent start = nullptr;  // only when timed
    CUevent end = nullptr;    // timed, every kReapEvery-th, or recorded later by a waiter
    std::shared_ptr<CompletionState> completion;
    std::vector<DispatchCommand> commands;  // keeps programs and buffers alive until done
    std::shared_ptr<BackendGraph> graph;    // a replayed graph, kept until done
    std::vector<Staging> staging;
    std::chrono::steady_clock::time_point called;  // for kernel_timeout
  };

  /**
   * An end event at or after submission `ticket` (recorded now if there is none),
   * held against reuse (waiters_) until the caller decrements waiters_; null when
   * `ticket` is already finished. `covered`: the submission the event ends.
   */
  CUevent hold_end_event(std::uint64_t ticket, std::uint64_t* covered);
  /** Finishes submission `ticket` and those before it if the GPU is done with them. Never blocks. */
  void reap(std::uint64_t ticket);
  /** Blocks until submission `ticket` is done, and finishes it and every earlier one. */
  void wait_for(std::uint64_t ticket);
  /**
   * Before a submission: with kMaxQueued launches and events queued, waits (without the GIL)
   * until the older half has finished. The driver's queue of work on a stream is finite: a
   * launch or event record into a full one waits inside the driver behind the work in front
   * (a kernel that never ends, say) while holding this queue's locks and, on the GIL-held
   * path, the GIL, so that no stop could reach that kernel.
   */
  void wait_for_room();
  /** What a submission takes of the stream's queue (its launches and events, roughly). */
  static std::size_t weight(const Submission& s);
  static constexpr std::size_t kMaxQueued = 512;
  /** Launches a submission between its events and queues it; returns its ticket. */
  template <class Launch>
  std::uint64_t push(Submission&& s, bool timed, Launch&& launch);
  /** Enqueues one dispatch (possibly several launches) on the stream; `ticket` for its stop checks (0: none). */
  void enqueue(const DispatchCommand& command, std::vector<Staging>& staging, std::uint64_t ticket);
  /**
   * Before a call's results are copied back to host memory: waits for its kernels, stopping
   * them (the stop word at `ticket`) on Ctrl-C or past kernel_timeout, then Interrupted or
   * an ExecutionError naming `kernel` and why (launch_mutex_ held).
   */
  void wait_before_copy_back(std::uint64_t ticket, const std::string& kernel,
                             std::chrono::steady_clock::time_point launched);
  /** Stops submissions up to `ticket`; their Completions fail naming `reason`. */
  void stop(std::uint64_t ticket, const std::string& reason);
  /** Why a finished submission was stopped, or "" when it was not (mutex_ held). */
  std::string stop_reason(const Submission& s);
  /** Why a call past kernel_timeout was stopped (its Completion's error says it). */
  std::string timeout_reason() const;
  /** kernel_timeout's thread: stops submissions older than the timeout, every 10 ms. */
  void watch_deadlines();
  CUevent take_event(bool timed);
  CUevent take_event_locked(bool timed);  // mutex_ held
  static constexpr std::uint64_t kReapEvery = 32;
  /** How far finished work may get ahead of the stop word before the word follows it (finish()). */
  static constexpr std::uint64_t kWordWindow = std::uint64_t(1) << 30;
  /** Returns what `s` holds to the pools; staging beyond the pool's size goes to `to_free`,
   *  for free_staging() once mutex_ is released (mutex_ held). */
  void release(Submission& s, std::vector<CUdeviceptr>& to_free);
  /** Frees staging memory that release() set aside (mutex_ not held: the free may wait for the device). */
  void free_staging(const std::vector<CUdeviceptr>& to_free);
  Staging take_staging(std::size_t bytes);
  /** Host -> device on the stream: through pinned chunks when large, else straight (launch_mutex_ held). */
  void copy_to_device(CUdeviceptr dst, const void* src, std::size_t n);
  /** Device -> host after all earlier work on the stream; returns once `dst` holds it (launch_mutex_ held). */
  void copy_to_host(void* dst, CUdeviceptr src, std::size_t n);
  /** Moves the submissions up to `ticket`, known to be finished, out of pending_ (mutex_ held). */
  void take_finished(std::uint64_t ticket, std::vector<Submission>& out);
  /** An untimed event no submission holds, back to the pool. */
  void give_back_event(CUevent e);
  /** Finishes taken submissions: GPU times, resources back to the pools, completions signalled. */
  void finish(std::vector<Submission>& done, CUresult status);
  /** The next ticket: one more, skipping those whose low 32 bits are 0 (mutex_ held). */
  void advance_ticket();

  CUcontext ctx_;
  const DeviceProps& props_;
  const bool timing_;
  const double kernel_timeout_;
  StopWord& stop_word_;  // never freed, as the queue
  CUstream stream_ = nullptr;
  // Graphs are captured from a stream of their own, never synchronised with the legacy default
  // stream: capturing stream_ (which is) would make another thread's use of that stream fail and
  // end the capture (the CUDA programming guide, "Prohibited and unhandled operations").
  CUstream capture_stream_ = nullptr;
  CUstream launch_stream_ = nullptr;  // where enqueue() launches kernels: stream_, or capture_stream_ while capturing
  std::mutex launch_mutex_;  // launches in submission order; guards host_staging_ and order_event_
  CUevent order_event_ = nullptr;  // wait_for_stream's event, made on first use
  std::unique_ptr<HostStaging> host_staging_;  // created with the stream
  std::mutex mutex_;         // everything below
  std::uint64_t next_ticket_ = 1;
  std::uint64_t finished_ticket_ = 0;   // every submission up to this one is finished
  std::deque<Submission> pending_;      // in ticket order
  std::size_t pending_weight_ = 0;      // the weight() of pending_
  unsigned waiters_ = 0;                // threads synchronising on an event outside the lock
  std::vector<CUevent> timed_events_, untimed_events_;
  std::vector<std::pair<CUevent, bool>> retired_;  // (event, timed), pooled once no waiter may hold them
  std::multimap<std::size_t, CUdeviceptr> staging_pool_;
  std::vector<std::pair<std::uint64_t, std::string>> stop_reasons_;  // (up to ticket, why), raised in order
  const char* stopping_all_ = nullptr;  // stop_all's reason: later submissions fail at once
  bool watching_ = false;               // the kernel_timeout thread runs
};

}  // namespace metalcall::cuda
