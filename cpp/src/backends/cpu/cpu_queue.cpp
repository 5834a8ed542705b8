#include "backends/cpu/cpu_queue.hpp"

#include <atomic>
#include <chrono>

#include "backends/cpu/cpu_program.hpp"
#include "metalcall/errors.hpp"
#include "backends/cpu/worker_pool.hpp"
#include "backends/cpu/worker_state.hpp"

namespace metalcall::cpu {

namespace {

// Below this many threads a call runs inline: handing it to another thread
// costs more than running it.
constexpr std::uint64_t kInlineThreads = 1 << 15;

std::uint64_t total_threads(const std::vector<DispatchCommand>& commands) {
  std::uint64_t n = 0;
  for (const auto& c : commands) n += std::uint64_t(c.grid[0]) * c.grid[1] * c.grid[2];
  return n;
}

struct RangeContext {
  metalcall_cpu_entry entry;
  const metalcall_cpu_launch* launch;
  std::uint64_t dispatch_id;
  const std::vector<std::size_t>* threadgroup_lengths;
};

void run_range(void* ctx, std::uint64_t begin, std::uint64_t end, unsigned worker) {
  auto* r = static_cast<RangeContext*>(ctx);
  WorkerState& state = WorkerState::of(worker);
  state.prepare(r->dispatch_id, *r->threadgroup_lengths);
  r->entry(r->launch, begin, end, state.table());
}

std::atomic<std::uint64_t> g_dispatch_ids{0};

}  // namespace

void run_dispatch(const DispatchCommand& command) {
  const auto& program = static_cast<const CpuProgram&>(*command.program);
  constexpr std::size_t kInlineArgs = 16;
  void* inline_args[kInlineArgs];
  std::vector<void*> many_args;
  void** args = inline_args;
  if (command.args.size() > kInlineArgs) {
    many_args.resize(command.args.size());
    args = many_args.data();
  }
  unsigned long long inline_bytes[kInlineArgs];
  std::vector<unsigned long long> many_bytes;
  unsigned long long* bytes = inline_bytes;
  if (command.args.size() > kInlineArgs) {
    many_bytes.resize(command.args.size());
    bytes = many_bytes.data();
  }
  for (std::size_t i = 0; i < command.args.size(); ++i) {
    const BoundArgument& a = command.args[i];
    args[i] = a.address();
    bytes[i] = a.buffer ? a.buffer->nbytes() : a.host_data ? a.host_nbytes
               : a.kind == ParamKind::threadgroup_memory ? a.threadgroup_length : a.bytes.size();
  }

  int fault = 0;
  char fault_message[512] = {};
  metalcall_cpu_launch launch{};
  launch.args = args;
  launch.arg_bytes = bytes;
  launch.fault = &fault;
  launch.fault_message = fault_message;
  launch.fault_capacity = sizeof fault_message;
  for (int d = 0; d < 3; ++d) {
    launch.grid[d] = command.grid[d];
    launch.group[d] = command.threadgroup[d];
    launch.groups[d] = (command.grid[d] + command.threadgroup[d] - 1) / command.threadgroup[d];
  }
  const std::uint64_t groups = std::uint64_t(launch.groups[0]) * launch.groups[1] * launch.groups[2];
  WorkerPool& pool = WorkerPool::instance();
  if (program.uses_fibers()) {
    // Kernel code cannot report a failure to map stacks: do it here, on every worker's state.
    const unsigned threads = command.threadgroup[0] * command.threadgroup[1] * command.threadgroup[2];
    for (unsigned w = 0; w < pool.size(); ++w) WorkerState::of(w).reserve_fibers(threads);
  }
  // A few chunks per worker balance uneven groups without much contention.
  const std::uint64_t chunk = std::max<std::uint64_t>(1, groups / (std::uint64_t(pool.size()) * 8));
  // [[threadgroup(i)]] lengths by index: every worker gets its own copy of that memory.
  std::vector<std::size_t> threadgroup_lengths;
  for (const auto& p : program.info().params) {
    if (p.kind != ParamKind::threadgroup_memory) continue;
    if (threadgroup_lengths.size() <= static_cast<std::size_t>(p.binding)) threadgroup_lengths.resize(p.binding + 1);
    threadgroup_lengths[p.binding] = command.args[p.position].threadgroup_length;
  }
  RangeContext ctx{program.entry(), &launch, g_dispatch_ids.fetch_add(1) + 1, &threadgroup_lengths};
  pool.parallel_for(groups, chunk, run_range, &ctx);
  if (__atomic_load_n(&fault, __ATOMIC_ACQUIRE)) {
    throw ExecutionError(std::string("[cpu checked] ") + fault_message +
                         "; the access was not performed");
  }
}

void CpuQueue::execute(Task& task) {
  const auto start = std::chrono::steady_clock::now();
  std::exception_ptr error;
  try {
    for (const auto& command : task.commands) run_dispatch(command);
  } catch (const Error&) {
    error = std::current_exception();
  } catch (const std::exception& e) {
    error = std::make_exception_ptr(ExecutionError(std::string("[cpu] the dispatch failed: ") + e.what()));
  }
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  task.commands.clear();  // release programs and buffers before signalling
  task.completion->finish(error, elapsed.count());
}

void CpuQueue::submit(std::vector<DispatchCommand>&& commands, const std::shared_ptr<CompletionState>& completion,
                      bool caller_waits) {
  Task task{std::move(commands), completion};
  std::unique_lock<std::mutex> lock(mutex_);
  if (!busy_ && pending_.empty() && (caller_waits || total_threads(task.commands) <= kInlineThreads)) {
    busy_ = true;
    lock.unlock();
    execute(task);
    lock.lock();
    busy_ = false;
    lock.unlock();
    cv_.notify_all();
    return;
  }
  if (!executor_started_) {
    executor_started_ = true;
    std::thread([this] { executor_loop(); }).detach();  // the queue lives for the process
  }
  pending_.push_back(std::move(task));
  lock.unlock();
  cv_.notify_all();
}

bool CpuQueue::run_now(const DispatchCommand& command, double* seconds) {
  if (std::uint64_t(command.grid[0]) * command.grid[1] * command.grid[2] > kInlineThreads) return false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (busy_ || !pending_.empty()) return false;
    busy_ = true;
  }
  const auto start = std::chrono::steady_clock::now();
  std::exception_ptr error;
  try {
    run_dispatch(command);
  } catch (...) {
    error = std::current_exception();
  }
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    busy_ = false;
  }
  cv_.notify_all();
  if (error) std::rethrow_exception(error);
  return true;
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
    {
      std::lock_guard<std::mutex> lock(mutex_);
      busy_ = false;
    }
    cv_.notify_all();
  }
}

void CpuQueue::synchronize() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return pending_.empty() && !busy_; });
}

}  // namespace metalcall::cpu
