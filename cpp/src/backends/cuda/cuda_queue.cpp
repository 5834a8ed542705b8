// The CUDA backend's queue (see cuda_queue.hpp).
//
// Partial threadgroups: a kernel with barriers or SIMD-group functions is launched
// so that every block is exactly one threadgroup (the partial edge groups are
// separate launches with smaller blocks): MSL says threads outside the grid do not
// exist, and barriers and SIMD lanes must see exactly the group's threads. Other
// kernels are one launch whose out-of-grid threads return at once.
#include "backends/cuda/cuda_queue.hpp"

#include <chrono>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <thread>

#include "core/interrupt.hpp"
#include "metalcall/errors.hpp"
#include "metalcall/interrupt.hpp"

namespace metalcall::cuda {

namespace {

std::exception_ptr gpu_error(CUresult r) {
  return std::make_exception_ptr(ExecutionError(
      "[cuda] the kernel failed on the GPU: " + describe(r) +
      " (a fault such as an out-of-bounds access leaves the CUDA context unusable: restart the process; "
      "Device(\"cpu\", checked=True) finds the faulting access)"));
}

// Blocks until `done()` says the GPU got there, as `block()` (the driver's blocking wait)
// would. Inside an InterruptScope the driver's wait, which no signal interrupts, is
// replaced by polling: a spin of a millisecond (a short call is seen as soon as the
// driver would see it), then sleeps of poll_interval (up to 5 ms) between queries;
// Interrupted when the scope's check asks (the work on the GPU goes on).
template <class Query, class Block>
CUresult wait_interruptibly(Query&& done, Block&& block) {
  if (!interrupt_check_installed()) return block();
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now(), spin_end = start + std::chrono::milliseconds(1);
  for (;;) {
    const CUresult r = done();
    if (r != CUDA_ERROR_NOT_READY) return r;
    if (interrupt_requested()) throw Interrupted();
    const Clock::time_point now = Clock::now();
    if (now < spin_end) continue;
    std::this_thread::sleep_for(poll_interval(now - start, std::chrono::milliseconds(5)));
  }
}

CUresult wait_for_event(CUevent e) {
  return wait_interruptibly([e] { return api().cuEventQuery(e); }, [e] { return api().cuEventSynchronize(e); });
}

CUresult wait_for_stream_end(CUstream s) {
  return wait_interruptibly([s] { return api().cuStreamQuery(s); }, [s] { return api().cuStreamSynchronize(s); });
}

}  // namespace

CudaQueue::CudaQueue(CUcontext ctx, const DeviceProps& props, bool timing, double kernel_timeout)
    : ctx_(ctx), props_(props), timing_(timing), kernel_timeout_(kernel_timeout), stop_word_(*new StopWord(ctx)) {
  make_current(ctx_);
  // Blocking (flags 0): ordered with the legacy default stream, where torch and CuPy queue their
  // work by default, so foreign tensors from it need no event (foreign_arguments.cpp).
  check(api().cuStreamCreate(&stream_, 0), "cuStreamCreate");
  check(api().cuStreamCreate(&capture_stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  launch_stream_ = stream_;
  host_staging_ = std::make_unique<HostStaging>(stream_);
}

// The bracket of every submission: launched in order between its events (a start
// event when timed; an end event when timed or every kReapEvery-th), then queued.
template <class Launch>
std::uint64_t CudaQueue::push(Submission&& s, bool timed, Launch&& launch) {
  const Api& a = api();
  wait_for_room();
  // A call with host memory holds this lock until its kernel (and all work before it) is done.
  std::unique_lock<std::mutex> in_order(launch_mutex_, std::defer_lock);
  lock_patiently(in_order);
  make_current(ctx_);
  try {
    if (timed) {
      s.start = take_event(true);
      check(a.cuEventRecord(s.start, stream_), "cuEventRecord");
    }
    // This submission's ticket: tickets advance only here, under launch_mutex_.
    std::uint64_t upcoming;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      upcoming = next_ticket_;
    }
    s.called = std::chrono::steady_clock::now();
    launch(s, upcoming);
    // An untimed call gets no end event of its own: a waiter records one when it
    // needs it (it also covers every earlier call). Every kReapEvery-th call gets one,
    // so finished work can be reaped without anyone waiting. Recorded without mutex_:
    // the driver may wait for room in the stream, and a stop needs mutex_.
    if (timed || upcoming % kReapEvery == 0) {
      s.end = take_event(timed);
      check(a.cuEventRecord(s.end, stream_), "cuEventRecord");
    }
    std::lock_guard<std::mutex> lock(mutex_);
    const std::uint64_t ticket = next_ticket_;
    s.ticket = next_ticket_;
    pending_weight_ += weight(s);
    advance_ticket();
    pending_.push_back(std::move(s));
    if (stopping_all_) {
      // stop_all ran while this was launched, and its stop did not cover this ticket.
      stop_reasons_.emplace_back(ticket, stopping_all_);
      try {
        stop_word_.raise(ticket);
      } catch (...) {
        // The context is failing: the submission is queued, and its waiter gets that error.
      }
    }
    return ticket;
  } catch (...) {
    // What was enqueued still runs: wait for it before the staging memory goes.
    a.cuStreamSynchronize(stream_);
    std::vector<CUdeviceptr> to_free;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      release(s, to_free);
      // Its ticket is not given again: the stop word may hold it (wait_before_copy_back), and
      // a later submission with that ticket would stop at once.
      advance_ticket();
    }
    free_staging(to_free);
    throw;
  }
}

void CudaQueue::submit(std::vector<DispatchCommand>&& commands, const std::shared_ptr<CompletionState>& completion) {
  Submission s;
  s.completion = completion;
  s.commands = std::move(commands);
  // A batch's two timed events cost little against its calls; single calls only when asked.
  const bool timed = timing_ || s.commands.size() > 1;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_all_) {  // Device::stop_all_work: nothing new runs
      completion->finish(std::make_exception_ptr(ExecutionError(std::string("[cuda] the call was not run (") +
                                                                stopping_all_ + ")")), 0);
      return;
    }
    if (kernel_timeout_ > 0 && !watching_) {
      watching_ = true;
      std::thread([this] { watch_deadlines(); }).detach();  // the queue lives for the process
    }
  }
  const std::uint64_t ticket = push(std::move(s), timed, [this](Submission& queued, std::uint64_t upcoming) {
    for (const auto& c : queued.commands) enqueue(c, queued.staging, upcoming);
  });
  completion->drive_with(this, ticket);
  // Reap, without blocking, what the previous marker says is finished.
  if (ticket % kReapEvery == 0 && ticket > kReapEvery) reap(ticket - kReapEvery);
}

namespace {

// An instantiated CUDA graph and what its kernels use (programs, buffers).
class CudaGraph final : public BackendGraph {
 public:
  CudaGraph(CUcontext ctx, CUgraph graph, CUgraphExec exec, std::vector<DispatchCommand> commands)
      : ctx_(ctx), graph_(graph), exec_(exec), commands_(std::move(commands)) {}
  ~CudaGraph() override {
    try {
      make_current(ctx_);
      api().cuGraphExecDestroy(exec_);
      api().cuGraphDestroy(graph_);
    } catch (...) {
    }
  }
  CUgraphExec exec() const { return exec_; }

 private:
  CUcontext ctx_;
  CUgraph graph_;
  CUgraphExec exec_;
  std::vector<DispatchCommand> commands_;
};

}  // namespace

std::shared_ptr<BackendGraph> CudaQueue::capture(const std::vector<DispatchCommand>& commands) {
  const Api& a = api();
  if (!a.graphs_ok()) return nullptr;
  std::unique_lock<std::mutex> launch(launch_mutex_, std::defer_lock);
  lock_patiently(launch);
  make_current(ctx_);
  if (a.cuStreamBeginCapture(capture_stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS) return nullptr;
  bool enqueued = true;
  std::vector<Staging> staging;  // stays empty: recorded calls with host memory are never captured
  launch_stream_ = capture_stream_;  // launch_mutex_ held: no other enqueue() runs meanwhile
  try {
    for (const auto& c : commands) enqueue(c, staging, 0);  // a replayed graph's kernels are not stopped
  } catch (...) {
    enqueued = false;  // the replay resubmits the calls, and reports the error then
  }
  launch_stream_ = stream_;
  CUgraph graph = nullptr;
  const CUresult ended = a.cuStreamEndCapture(capture_stream_, &graph);
  CUgraphExec exec = nullptr;
  if (!enqueued || ended != CUDA_SUCCESS || !graph || !staging.empty() ||
      a.cuGraphInstantiateWithFlags(&exec, graph, 0) != CUDA_SUCCESS) {
    if (graph) a.cuGraphDestroy(graph);
    return nullptr;
  }
  return std::make_shared<CudaGraph>(ctx_, graph, exec, commands);
}

void CudaQueue::replay(const std::shared_ptr<BackendGraph>& graph, const std::shared_ptr<CompletionState>& completion) {
  Submission s;
  s.completion = completion;
  s.graph = graph;
  const std::uint64_t ticket = push(std::move(s), /*timed=*/true, [&graph, this](Submission&, std::uint64_t) {
    check(api().cuGraphLaunch(static_cast<const CudaGraph&>(*graph).exec(), stream_),
          "replaying a graph (cuGraphLaunch)");
  });
  completion->drive_with(this, ticket);
}

CUevent CudaQueue::hold_end_event(std::uint64_t ticket, std::uint64_t* covered) {
  auto find = [&]() -> CUevent {
    if (ticket <= finished_ticket_) return nullptr;
    for (const auto& s : pending_) {
      if (s.ticket >= ticket && s.end) {
        *covered = s.ticket;
        ++waiters_;  // keeps the event out of the pool while the caller holds it
        return s.end;
      }
    }
    return nullptr;
  };
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (ticket <= finished_ticket_) return nullptr;
    if (CUevent e = find()) return e;
  }
  // None yet: record one after everything submitted so far, on the newest submission.
  std::unique_lock<std::mutex> launch(launch_mutex_, std::defer_lock);
  lock_patiently(launch);
  CUevent e = nullptr;
  std::uint64_t newest = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (CUevent found = find()) return found;
    if (ticket <= finished_ticket_ || pending_.empty()) return nullptr;
    newest = pending_.back().ticket;
    e = take_event_locked(false);
  }
  // Recorded without mutex_ (the driver may wait for room in the stream; a stop needs
  // mutex_). The launch lock keeps new submissions out, and without an end event at or
  // after `ticket` nobody can finish the newest one meanwhile.
  make_current(ctx_);
  const CUresult r = api().cuEventRecord(e, stream_);
  std::lock_guard<std::mutex> lock(mutex_);
  if (r != CUDA_SUCCESS) {
    untimed_events_.push_back(e);
    throw ExecutionError("[cuda] recording an event failed: " + describe(r));
  }
  if (pending_.empty() || pending_.back().ticket != newest || pending_.back().end) {
    untimed_events_.push_back(e);  // not expected: finished (or given an event) after all
    return ticket <= finished_ticket_ ? nullptr : find();
  }
  pending_.back().end = e;
  *covered = newest;
  ++waiters_;
  return e;
}

void CudaQueue::reap(std::uint64_t ticket) {
  std::uint64_t covered = 0;
  CUevent end = hold_end_event(ticket, &covered);
  if (!end) return;
  make_current(ctx_);
  const CUresult r = api().cuEventQuery(end);
  std::vector<Submission> done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    --waiters_;
    if (r != CUDA_ERROR_NOT_READY) take_finished(covered, done);
  }
  if (!done.empty()) finish(done, r);
}

void CudaQueue::wait_for(std::uint64_t ticket) {
  std::uint64_t covered = 0;
  CUevent end = hold_end_event(ticket, &covered);
  if (!end) return;  // already finished
  make_current(ctx_);
  CUresult r = CUDA_SUCCESS;
  try {
    r = wait_for_event(end);
  } catch (const Interrupted&) {
    std::lock_guard<std::mutex> lock(mutex_);
    --waiters_;  // the submissions stay pending: a later wait or reap finishes them
    throw;
  }
  std::vector<Submission> done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    --waiters_;
    take_finished(covered, done);
  }
  if (!done.empty()) finish(done, r);
}

void CudaQueue::synchronize() {
  std::uint64_t last = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    last = next_ticket_ - 1;
  }
  CUresult r = CUDA_SUCCESS;
  try {
    if (last) wait_for(last);
    make_current(ctx_);
    r = wait_for_stream_end(stream_);
  } catch (const Interrupted&) {
    if (last) stop(last, "interrupted");  // Ctrl-C stops everything the wait was for
    throw;
  }
  if (r != CUDA_SUCCESS) throw ExecutionError("[cuda] the GPU reported an error: " + describe(r));
}

void CudaQueue::cancel(CompletionState& state) {
  const char* why = state.cancel_reason();
  if (state.ticket()) stop(state.ticket(), why ? why : "cancelled");
}

void CudaQueue::stop_all(const char* reason) {
  std::uint64_t last = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_all_ = reason;
    last = next_ticket_ - 1;
  }
  if (last) stop(last, reason);
}

void CudaQueue::stop(std::uint64_t ticket, const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (ticket <= finished_ticket_) return;
    stop_reasons_.emplace_back(ticket, reason);
  }
  stop_word_.raise(ticket);
}

std::string CudaQueue::stop_reason(const Submission& s) {
  if (s.graph) return "";  // a replayed graph's kernels carry no ticket
  for (const auto& [ticket, why] : stop_reasons_)
    if (s.ticket <= ticket) return why;
  return "";
}

std::string CudaQueue::timeout_reason() const {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%g", kernel_timeout_);
  return std::string("it ran longer than the device's kernel_timeout of ") + seconds + " s, counted from the call";
}

void CudaQueue::watch_deadlines() {
  const auto timeout = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(kernel_timeout_));
  const std::string why = timeout_reason();
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::uint64_t late = 0;
    const std::uint64_t stopped = stop_word_.value();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_all_) return;  // the process is ending: no more CUDA calls from here
      const auto now = std::chrono::steady_clock::now();
      for (const auto& s : pending_)
        if (s.ticket > stopped && now - s.called > timeout) late = s.ticket;
    }
    if (late) stop(late, why);
  }
}

void CudaQueue::copy(void* dst, const void* src, std::size_t n) {
  if (!n) return;
  // Under Ctrl-C's scope, the earlier work first, interruptibly; the copy itself is not
  // interrupted, so that no caller frees memory the GPU still writes. (Without a scope the
  // stream synchronisation below waits for that work anyway.)
  if (interrupt_check_installed()) synchronize();
  {
    std::unique_lock<std::mutex> in_order(launch_mutex_, std::defer_lock);
    lock_patiently(in_order);
    make_current(ctx_);
    check(api().cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst), reinterpret_cast<CUdeviceptr>(src), n, stream_),
          "cuMemcpyAsync (copying a buffer)");
  }
  const CUresult r = api().cuStreamSynchronize(stream_);
  if (r != CUDA_SUCCESS) throw ExecutionError("[cuda] copying a buffer failed: " + describe(r));
}

bool CudaQueue::read_after(const CompletionState& use, void* pinned, CUdeviceptr src, std::size_t n) {
  const Api& a = api();
  CUevent copied = nullptr;
  {
    std::unique_lock<std::mutex> in_order(launch_mutex_, std::defer_lock);
    lock_patiently(in_order);
    // Set after the launch (submit): under the launch lock, `use` is on the stream before the copy.
    if (use.driver() != this) return false;
    make_current(ctx_);
    copied = take_event(false);
    CUresult r = a.cuMemcpyDtoHAsync(pinned, src, n, stream_);
    if (r == CUDA_SUCCESS) r = a.cuEventRecord(copied, stream_);
    if (r != CUDA_SUCCESS) {
      give_back_event(copied);
      throw ExecutionError("[cuda] reading a buffer failed: " + describe(r));
    }
  }
  CUresult r;
  try {
    r = wait_for_event(copied);
  } catch (...) {
    give_back_event(copied);  // recorded again by its next user: a pending record is no obstacle
    throw;
  }
  give_back_event(copied);
  if (r != CUDA_SUCCESS) throw ExecutionError("[cuda] reading a buffer failed: " + describe(r));
  return true;
}

void CudaQueue::give_back_event(CUevent e) {
  std::lock_guard<std::mutex> lock(mutex_);
  untimed_events_.push_back(e);
}

void CudaQueue::wait_for_stream(CUstream other) {
  const Api& a = api();
  // The legacy default stream (0, or CU_STREAM_LEGACY): the blocking stream_ already waits for
  // it (torch's and CuPy's default streams: 0.6-2.8 µs a call saved on the H200's host).
  if (other == nullptr || reinterpret_cast<std::uintptr_t>(other) == 1) return;
  std::unique_lock<std::mutex> in_order(launch_mutex_, std::defer_lock);
  lock_patiently(in_order);
  make_current(ctx_);
  // Always a record and a wait: on the H200's host they cost 0.6 µs together, a cuStreamQuery
  // (to skip them when the producer has nothing queued) 1.35 µs (.devcarry/s13/stream_costs.py).
  // One event, recorded again for each producer: a wait already enqueued keeps the state the
  // event had when it was enqueued, so re-recording never changes an earlier wait (and a call
  // costs a record and a wait, not an event's creation and destruction too).
  if (!order_event_) check(a.cuEventCreate(&order_event_, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  CUresult r = a.cuEventRecord(order_event_, other);
  if (r == CUDA_SUCCESS) r = a.cuStreamWaitEvent(stream_, order_event_, 0);
  if (r != CUDA_SUCCESS) {
    throw ArgumentError("[cuda] cannot order this device's stream after the producer's stream " +
                        std::to_string(reinterpret_cast<std::uintptr_t>(other)) + ": " + describe(r));
  }
}

void CudaQueue::take_finished(std::uint64_t ticket, std::vector<Submission>& out) {
  while (!pending_.empty() && pending_.front().ticket <= ticket) {
    pending_weight_ -= weight(pending_.front());
    out.push_back(std::move(pending_.front()));
    pending_.pop_front();
  }
  finished_ticket_ = std::max(finished_ticket_, ticket);
}

void CudaQueue::finish(std::vector<Submission>& done, CUresult status) {
  const Api& a = api();
  for (auto& s : done) {
    double seconds = std::numeric_limits<double>::quiet_NaN();  // not timed
    float ms = 0;
    if (status == CUDA_SUCCESS && s.start && a.cuEventElapsedTime(&ms, s.start, s.end) == CUDA_SUCCESS)
      seconds = ms / 1000.0;
    std::string stopped;
    std::vector<CUdeviceptr> to_free;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      release(s, to_free);
      stopped = stop_reason(s);
    }
    free_staging(to_free);
    s.commands.clear();  // release programs and buffers before signalling
    s.graph.reset();
    std::exception_ptr error = status == CUDA_SUCCESS ? nullptr : gpu_error(status);
    if (!error && !stopped.empty()) {
      error = std::make_exception_ptr(ExecutionError("[cuda] the call was stopped (" + stopped +
                                                     ") before it finished, or as it did; what its kernels wrote "
                                                     "so far stays"));
    }
    s.completion->finish(error, seconds);
  }
  // The reasons of stops whose submissions have all finished are not needed any more.
  std::uint64_t finished = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    while (!stop_reasons_.empty() && stop_reasons_.front().first <= finished_ticket_)
      stop_reasons_.erase(stop_reasons_.begin());
    finished = finished_ticket_;
  }
  // Kernels compare the low 32 bits of their ticket and the word modulo 2^32 (metal_stop.h):
  // the word follows finished work (whose tickets no running kernel has) so that every
  // running ticket stays within 2^30 of it.
  if (finished > stop_word_.value() + kWordWindow) stop_word_.raise(finished);
}

void CudaQueue::advance_ticket() {
  // A ticket whose low 32 bits are 0 would read as "no ticket" in the kernels' check.
  if (static_cast<std::uint32_t>(++next_ticket_) == 0) ++next_ticket_;
}

CUevent CudaQueue::take_event(bool timed) {
  std::lock_guard<std::mutex> lock(mutex_);
  return take_event_locked(timed);
}

CUevent CudaQueue::take_event_locked(bool timed) {
  auto& pool = timed ? timed_events_ : untimed_events_;
  if (!pool.empty()) {
    CUevent e = pool.back();
    pool.pop_back();
    return e;
  }
  CUevent e = nullptr;
  check(api().cuEventCreate(&e, timed ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  return e;
}

void CudaQueue::release(Submission& s, std::vector<CUdeviceptr>& to_free) {
  // Untimed events are the end events of untimed submissions; timed ones come in pairs.
  const bool timed = s.start != nullptr;
  if (s.start) retired_.emplace_back(s.start, true);
  if (s.end) retired_.emplace_back(s.end, timed);
  if (waiters_ == 0) {  // else a waiter may still synchronise on one of them
    for (const auto& [e, is_timed] : retired_) (is_timed ? timed_events_ : untimed_events_).push_back(e);
    retired_.clear();
  }
  for (const auto& st : s.staging) staging_pool_.emplace(st.bytes, st.ptr);
  // Keep the pool small: large stagings are freed, after mutex_ is released. (cuMemFree may
  // wait for the whole device: under mutex_, behind a kernel that never ends, it kept the stop
  // that would end that kernel from ever taking mutex_.)
  while (staging_pool_.size() > 8) {
    auto last = std::prev(staging_pool_.end());
    to_free.push_back(last->second);
    staging_pool_.erase(last);
  }
  s.start = s.end = nullptr;
  s.staging.clear();
}

void CudaQueue::free_staging(const std::vector<CUdeviceptr>& to_free) {
  for (CUdeviceptr p : to_free) free_device_memory(ctx_, p);
}

std::size_t CudaQueue::weight(const Submission& s) {
  // A dispatch's first launch (edge groups add more), a graph's launch, and its events
  // (a start and an end when timed, an end every kReapEvery-th call) counted as one.
  return s.commands.size() + (s.graph ? 1 : 0) + 1;
}

void CudaQueue::wait_for_room() {
  std::uint64_t until = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (pending_weight_ < kMaxQueued) return;
    // Wait until the older half has finished.
    std::size_t kept = 0;
    for (auto it = pending_.rbegin(); it != pending_.rend(); ++it) {
      kept += weight(*it);
      if (kept >= kMaxQueued / 2) {
        until = it->ticket;
        break;
      }
    }
  }
  if (!until) return;
  struct Wait {
    CudaQueue* queue;
    std::uint64_t ticket;
    std::exception_ptr error;
  } w{this, until, nullptr};
  // Through the blocking-wait hook: a caller holding the GIL lets go of it while it waits.
  run_blocking_wait(
      [](void* arg) {
        Wait& w = *static_cast<Wait*>(arg);
        try {
          w.queue->wait_for(w.ticket);
        } catch (...) {
          w.error = std::current_exception();
        }
      },
      &w);
  if (w.error) std::rethrow_exception(w.error);
}

}  // namespace metalcall::cuda
