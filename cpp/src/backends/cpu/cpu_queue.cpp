#include "backends/cpu/cpu_queue.hpp"

#include <algorithm>
#include <chrono>
#include <new>

#include "backends/cpu/fork_guard.hpp"

#include "backends/cpu/cpu_dispatch.hpp"
#include "core/interrupt.hpp"
#include "metalcall/errors.hpp"
#include "metalcall/interrupt.hpp"

namespace metalcall::cpu {

namespace {

// A call expected to take less than this runs on the calling thread (queue idle):
// handing it to the executor and waiting for it costs a good share of that in
// wake-ups, and a kept Completion gains little overlap from so short a call.
constexpr double kCallerMaxNs = 100e3;
// Before a kernel's first run its cost is unknown: run it here up to this many threads, if
// it has no loops (a kernel with loops may run for any time: the call returns at once, so
// that its Completion can be waited on with a timeout).
constexpr std::uint64_t kUnmeasuredCallerThreads = 1 << 15;

bool short_enough(const CallEstimate& e) {
  return e.measured ? e.wall_ns <= kCallerMaxNs : e.loop_free && e.threads <= kUnmeasuredCallerThreads;
}

}  // namespace

CpuQueue::CpuQueue(DispatchRunner& runner, double kernel_timeout) : runner_(runner), kernel_timeout_(kernel_timeout) {
  reset_on_fork(this, [](void* self) { static_cast<CpuQueue*>(self)->reset_after_fork(); });
}

CpuQueue::~CpuQueue() { forget_on_fork(this); }

void CpuQueue::reset_after_fork() {
  // Only this thread exists: the parent's other threads may have left these
  // locked or mid-update, so they are built anew (the old ones are not destroyed).
  new (&mutex_) std::mutex;
  new (&cv_) std::condition_variable;
  new (&executor_cv_) std::condition_variable;
  busy_ = false;
  finishing_ = 0;
  executor_started_ = false;
  const auto error = std::make_exception_ptr(
      DeviceError("[cpu] this call was queued before os.fork() and runs only in the parent process"));
  for (auto& task : pending_) task.completion->finish(error, 0);
  pending_.clear();
  // Running in the parent when it forked: no thread runs them here.
  for (CompletionState* completion : running_) completion->finish(error, 0);
  running_.clear();
}

void CpuQueue::finishing(const CompletionState* completion) {
  auto it = std::find_if(running_.begin(), running_.end(), [&](const CompletionState* c) { return c == completion; });
  if (it != running_.end()) running_.erase(it);
}

std::pair<std::exception_ptr, double> CpuQueue::execute(Task& task) {
  std::exception_ptr error;
  double seconds = 0;
  try {
    if (task.completion->cancel_flag().load(std::memory_order_relaxed)) {
      const char* why = task.completion->cancel_reason();
      throw ExecutionError(std::string("[cpu] the call was cancelled (") + (why ? why : "interrupted") +
                           ") before it started");
    }
    const StopRequest stop{&task.completion->cancel_flag(), task.completion.get(), kernel_timeout_};
    for (const auto& command : task.list()) seconds += runner_.run(command, stop);
  } catch (const Error&) {
    error = std::current_exception();
  } catch (const std::exception& e) {
    error = std::make_exception_ptr(ExecutionError(std::string("[cpu] the dispatch failed: ") + e.what()));
  }
  task.commands.clear();  // release programs and buffers before signalling
  task.recorded.reset();
  return {error, seconds};
}

void CpuQueue::finish_last(Task& task, const std::pair<std::exception_ptr, double>& outcome) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    busy_ = false;
    ++finishing_;
    finishing(task.completion.get());
  }
  task.completion->finish(outcome.first, outcome.second);
  bool work_waiting;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    --finishing_;
    work_waiting = !pending_.empty();
  }
  changed(work_waiting);
}

void CpuQueue::changed(bool work_waiting) {
  cv_.notify_all();  // no system call without waiters
  if (work_waiting) executor_cv_.notify_one();
}

bool CpuQueue::idle(std::unique_lock<std::mutex>& lock) {
  cv_.wait(lock, [&] { return finishing_ == 0 || busy_ || !pending_.empty(); });
  return finishing_ == 0 && !busy_ && pending_.empty();
}

void CpuQueue::replay(std::shared_ptr<const std::vector<DispatchCommand>> commands,
                      const std::shared_ptr<CompletionState>& completion) {
  Task task{{}, completion, std::move(commands)};
  enqueue(std::move(task), false);
}

void CpuQueue::submit(std::vector<DispatchCommand>&& commands, const std::shared_ptr<CompletionState>& completion,
                      bool caller_waits) {
  enqueue(Task{std::move(commands), completion, nullptr}, caller_waits);
}

void CpuQueue::enqueue(Task&& task, bool caller_waits) {
  CompletionState* completion = task.completion.get();  // task holds it
  const bool here = caller_waits || short_enough(runner_.estimate(task.list()));
  std::unique_lock<std::mutex> lock(mutex_);
  if (here && idle(lock)) {
    busy_ = true;
    started(task);
    lock.unlock();
    submission_queued();  // it is next in the queue: other threads may submit behind it
    finish_last(task, execute(task));
    return;
  }
  // Whoever waits first runs it: the executor, or a thread that waits on the Completion.
  completion->drive_with(this);
  if (!executor_started_) {
    executor_started_ = true;
    std::thread([this] { executor_loop(); }).detach();  // the queue lives for the process
  }
  pending_.push_back(std::move(task));
  lock.unlock();
  changed(true);
}

void CpuQueue::stop_all(const char* reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& task : pending_) task.completion->request_cancel(reason);
  for (CompletionState* completion : running_) completion->request_cancel(reason);
}

bool CpuQueue::run_now(const DispatchCommand& command, double* seconds) {
  if (!short_enough(runner_.estimate(command))) return false;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!idle(lock)) return false;
    busy_ = true;
  }
  std::exception_ptr error;
  try {
    *seconds = runner_.run(command, StopRequest{nullptr, nullptr, kernel_timeout_});
  } catch (...) {
    error = std::current_exception();
  }
  bool work_waiting;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    busy_ = false;
    work_waiting = !pending_.empty();
  }
  changed(work_waiting);
  if (error) std::rethrow_exception(error);
  return true;
}

std::vector<CpuQueue::Task> CpuQueue::claim(const CompletionState* last) {
  std::vector<Task> tasks;
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return finishing_ == 0 || busy_; });
  if (busy_) return tasks;  // the queue is running earlier work: the waiter sleeps
  std::size_t count = pending_.size();
  if (last) {
    auto it = std::find_if(pending_.begin(), pending_.end(),
                           [&](const Task& t) { return t.completion.get() == last; });
    if (it == pending_.end()) return tasks;  // already taken
    count = std::size_t(it - pending_.begin()) + 1;
  }
  if (count == 0) return tasks;
  for (std::size_t i = 0; i < count; ++i) {
    started(pending_.front());
    tasks.push_back(std::move(pending_.front()));
    pending_.pop_front();
  }
  busy_ = true;
  return tasks;
}

void CpuQueue::run_claimed(std::vector<Task>& tasks) {
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const auto outcome = execute(tasks[i]);
    if (i + 1 < tasks.size()) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        finishing(tasks[i].completion.get());
      }
      tasks[i].completion->finish(outcome.first, outcome.second);
    }
    else finish_last(tasks[i], outcome);
  }
}

void CpuQueue::wait(CompletionState& state) {
  std::vector<Task> tasks = claim(&state);
  run_claimed(tasks);
}

void CpuQueue::executor_loop() {
  for (;;) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      executor_cv_.wait(lock, [&] { return !pending_.empty() && !busy_ && finishing_ == 0; });
      started(pending_.front());
      task = std::move(pending_.front());
      pending_.pop_front();
      busy_ = true;
      executing_ = task.completion.get();
    }
    const auto outcome = execute(task);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      executing_ = nullptr;
    }
    finish_last(task, outcome);
  }
}

void CpuQueue::synchronize() {
  std::vector<Task> tasks = claim(nullptr);
  run_claimed(tasks);  // its dispatches stop between chunks if this thread's InterruptScope fires
  std::unique_lock<std::mutex> lock(mutex_);
  auto idle = [&] { return pending_.empty() && !busy_ && finishing_ == 0; };
  if (!interrupt_check_installed()) {
    cv_.wait(lock, idle);
    return;
  }
  // Ctrl-C (metalcall/interrupt.hpp) stops waiting for everything: so everything is
  // cancelled, the executor's task between chunks and the queued ones before they start.
  auto cancel_all = [&] {
    for (auto& task : pending_) task.completion->request_cancel();
    if (executing_) executing_->request_cancel();
    return Interrupted();
  };
  while (!cv_.wait_for(lock, std::chrono::milliseconds(20), idle)) {
    if (interrupt_requested()) throw cancel_all();
  }
  if (InterruptScope::interrupted()) throw cancel_all();
}

}  // namespace metalcall::cpu
