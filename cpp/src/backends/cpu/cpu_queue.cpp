#include "backends/cpu/cpu_queue.hpp"

#include <algorithm>

#include "backends/cpu/cpu_dispatch.hpp"
#include "metalcall/errors.hpp"

namespace metalcall::cpu {

namespace {

// A call expected to take less than this runs on the calling thread (queue idle):
// handing it to the executor and waiting for it costs a good share of that in
// wake-ups, and a kept Completion gains little overlap from so short a call.
constexpr double kCallerMaxNs = 100e3;
// Before a kernel's first run its cost is unknown: run it here up to this many threads.
constexpr std::uint64_t kUnmeasuredCallerThreads = 1 << 15;

bool short_enough(const CallEstimate& e) {
  return e.measured ? e.wall_ns <= kCallerMaxNs : e.threads <= kUnmeasuredCallerThreads;
}

}  // namespace

void CpuQueue::execute(Task& task) {
  std::exception_ptr error;
  double seconds = 0;
  try {
    for (const auto& command : task.commands) seconds += run_dispatch(command);
  } catch (const Error&) {
    error = std::current_exception();
  } catch (const std::exception& e) {
    error = std::make_exception_ptr(ExecutionError(std::string("[cpu] the dispatch failed: ") + e.what()));
  }
  task.commands.clear();  // release programs and buffers before signalling
  // Before the queue is released: a Completion is done no later than those before
  // it, and synchronize() returns with every one done.
  task.completion->finish(error, seconds);
}

void CpuQueue::release() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    busy_ = false;
  }
  cv_.notify_all();
}

void CpuQueue::submit(std::vector<DispatchCommand>&& commands, const std::shared_ptr<CompletionState>& completion,
                      bool caller_waits) {
  Task task{std::move(commands), completion};
  const bool here = caller_waits || short_enough(estimate(task.commands));
  std::unique_lock<std::mutex> lock(mutex_);
  if (here && !busy_ && pending_.empty()) {
    busy_ = true;
    lock.unlock();
    execute(task);
    release();
    return;
  }
  // Whoever waits first runs it: the executor, or a thread that waits on the Completion.
  completion->set_helper(this);
  if (!executor_started_) {
    executor_started_ = true;
    std::thread([this] { executor_loop(); }).detach();  // the queue lives for the process
  }
  pending_.push_back(std::move(task));
  lock.unlock();
  cv_.notify_all();
}

bool CpuQueue::run_now(const DispatchCommand& command, double* seconds) {
  if (!short_enough(estimate(command))) return false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (busy_ || !pending_.empty()) return false;
    busy_ = true;
  }
  std::exception_ptr error;
  try {
    *seconds = run_dispatch(command);
  } catch (...) {
    error = std::current_exception();
  }
  release();
  if (error) std::rethrow_exception(error);
  return true;
}

std::vector<CpuQueue::Task> CpuQueue::claim(const CompletionState* last) {
  std::vector<Task> tasks;
  std::lock_guard<std::mutex> lock(mutex_);
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
    tasks.push_back(std::move(pending_.front()));
    pending_.pop_front();
  }
  busy_ = true;
  return tasks;
}

void CpuQueue::run_claimed(std::vector<Task>& tasks) {
  if (tasks.empty()) return;
  for (auto& task : tasks) execute(task);
  release();
}

void CpuQueue::help(CompletionState& state) {
  std::vector<Task> tasks = claim(&state);
  run_claimed(tasks);
}

void CpuQueue::executor_loop() {
  for (;;) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return !pending_.empty() && !busy_; });
      task = std::move(pending_.front());
      pending_.pop_front();
      busy_ = true;
    }
    execute(task);
    release();
  }
}

void CpuQueue::synchronize() {
  std::vector<Task> tasks = claim(nullptr);
  run_claimed(tasks);
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return pending_.empty() && !busy_; });
}

}  // namespace metalcall::cpu
