// Runs one dispatch on the CPU: plans it from the kernel's measured cost (alone on the
// calling thread or over the worker pool, and in what chunks), runs it, records its cost.
#include "backends/cpu/cpu_dispatch.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>

#include "backends/cpu/cpu_program.hpp"
#include "backends/cpu/dispatch_clock.hpp"
#include "backends/cpu/kernel_stop.hpp"
#include "backends/cpu/stack_guard.hpp"
#include "backends/cpu/worker_pool.hpp"
#include "backends/cpu/worker_state.hpp"
#include "metalcall/errors.hpp"

namespace metalcall::cpu {

namespace {

// A dispatch goes to the pool when its measured work is over what starting the pool
// costs: about a µs while workers spin for the next job (they do for a while after
// each one), tens of µs to wake them from sleep. Below that it runs on the calling
// thread alone. Calls that come back to back (less than kBackToBack apart) count as
// warm even when the last one ran alone: the first pooled one wakes the workers,
// and they spin for the next.
constexpr double kPoolMinNsWarm = 5e3;
constexpr double kPoolMinNsCold = 40e3;
constexpr std::int64_t kBackToBackNs = 100'000;
// Chunks of at least this much work: taking a chunk costs an atomic (contended when
// workers steal from each other's parts) and two clock reads, which would swamp chunks of a few hundred ns. And of at most
// this much: when the last chunks run, the workers that found none wait for them.
constexpr double kMinChunkNs = 2e3;
constexpr double kMaxChunkNs = 50e3;
// Workers for a pooled dispatch: one per this much of its measured work (so that each
// has enough to pay for joining), at least two, at most the pool.
constexpr double kWorkPerWorkerNs = 4e3;
// Before a program's first run its cost is unknown: pool it above this many threads,
// in chunks of at most kUnmeasuredChunkThreads (so that a huge first call can be
// cancelled between chunks).
constexpr std::uint64_t kUnmeasuredInlineThreads = 1 << 15;
constexpr std::uint64_t kUnmeasuredChunkThreads = 1 << 16;

std::int64_t now_ns() { return dispatch_now_ns(); }

std::atomic<std::int64_t> g_last_end_ns{0};  // when the last dispatch ended

std::uint64_t grid_threads(const DispatchCommand& c) { return std::uint64_t(c.grid[0]) * c.grid[1] * c.grid[2]; }

bool one_group(const DispatchCommand& c) {
  return c.grid[0] <= c.threadgroup[0] && c.grid[1] <= c.threadgroup[1] && c.grid[2] <= c.threadgroup[2];
}

struct Plan {
  bool pooled;
  unsigned width;  // pooled: the workers to run it on, the caller included
  CallEstimate estimate;
};

Plan plan(const DispatchCommand& command) {
  const auto& program = static_cast<const CpuProgram&>(*command.program);
  Plan p{};
  p.estimate.threads = grid_threads(command);
  p.estimate.loop_free = program.info().loop_free;
  const double per_thread = program.ns_per_thread();
  if (one_group(command)) {  // the common tiny call: nothing to split
    p.estimate.measured = per_thread >= 0;
    p.estimate.wall_ns = per_thread * double(p.estimate.threads);
    return p;
  }
  WorkerPool& pool = WorkerPool::instance();
  const bool splittable = pool.size() > 1;
  if (per_thread < 0) {
    p.pooled = splittable && p.estimate.threads > kUnmeasuredInlineThreads;
    p.width = pool.size();
    return p;
  }
  const double work = per_thread * double(p.estimate.threads);
  auto warm = [&] {
    return pool.warm() || now_ns() - g_last_end_ns.load(std::memory_order_relaxed) < kBackToBackNs;
  };
  p.pooled = splittable && work > kPoolMinNsWarm && (work > kPoolMinNsCold || warm());
  p.width = static_cast<unsigned>(std::min<double>(pool.size(), std::max(2.0, work / kWorkPerWorkerNs)));
  p.estimate.measured = true;
  p.estimate.wall_ns = p.pooled ? work / p.width : work;
  return p;
}

// Pooled: one worker's work time, on its own cache line (a shared counter would be
// written by every worker after every chunk).
struct alignas(64) BusyNs {
  std::int64_t ns = 0;
};

struct RangeContext {
  metalcall_cpu_entry entry;
  const metalcall_cpu_launch* launch;
  std::uint64_t dispatch_id;
  const std::vector<std::size_t>* threadgroup_lengths;
  BusyNs* busy;  // pooled: one per worker, each written only by its worker; null when not pooled
  RunControl* control;  // stops: remaining chunks are skipped, kernel code with loops leaves at once
  bool in_loops;        // the kernel's loops check the stop word: run it so that a stop can leave it
  bool guarded;         // a stack overflow leaves it too (stack_guard.hpp: the in-process device)
};

// `count` zeroed BusyNs, kept by the calling thread for its pooled dispatches: no allocation
// per call. Reached only when pooled: a thread_local costs a call (__tls_get_addr) in this library.
BusyNs* busy_times(unsigned count) {
  thread_local std::vector<BusyNs> times;
  if (times.size() < count) times.resize(std::max<std::size_t>(count, WorkerPool::instance().size()));
  std::fill_n(times.begin(), count, BusyNs{});
  return times.data();
}

bool run_range(void* ctx, std::uint64_t begin, std::uint64_t end, unsigned worker) {
  auto* r = static_cast<RangeContext*>(ctx);
  if (r->control->stopping()) return false;
  WorkerState& state = WorkerState::of(worker);
  state.prepare(r->dispatch_id, *r->threadgroup_lengths);
  const std::int64_t start = r->busy ? now_ns() : 0;  // else timed by run_dispatch
  if (r->in_loops || r->guarded) {
    r->control->run(r->entry, r->launch, begin, end, state.table());
  } else {
    r->entry(r->launch, begin, end, state.table());
  }
  if (r->busy) r->busy[worker].ns += now_ns() - start;
  return true;
}

// While the calling thread waits for the pool's workers to finish their chunks.
void idle_range(void* ctx) { static_cast<RangeContext*>(ctx)->control->idle(); }

std::atomic<std::uint64_t> g_dispatch_ids{0};

// Threads per SIMD-group for the launch: 32 (Apple GPUs'), or the width the Metal simulator runs a
// pipeline with (DispatchCommand::simd_width), which the fibers and the prelude's SIMD-group
// functions then use.
unsigned simd_width_of(const DispatchCommand& command) {
  const std::uint32_t w = command.simd_width ? command.simd_width : 32;
  if (w < 4 || w > 64 || (w & (w - 1)) != 0)
    throw ArgumentError("[cpu] kernel '" + command.program->info().name + "': a SIMD-group width of " +
                        std::to_string(w) + " threads; it must be a power of two from 4 to 64");
  return w;
}

}  // namespace

CallEstimate estimate(const DispatchCommand& command) { return plan(command).estimate; }

CallEstimate DispatchRunner::estimate(const std::vector<DispatchCommand>& commands) {
  CallEstimate total;
  total.measured = true;
  for (const auto& c : commands) {
    const CallEstimate e = estimate(c);
    total.measured = total.measured && e.measured;
    total.loop_free = total.loop_free && e.loop_free;
    total.threads += e.threads;
    total.wall_ns += e.wall_ns;
  }
  return total;
}

double run_dispatch(const DispatchCommand& command, const StopRequest& stop) {
  auto& program = static_cast<CpuProgram&>(*command.program);
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
  unsigned long long threadgroup_bytes = 0;
  for (std::size_t i = 0; i < command.args.size(); ++i) {
    const BoundArgument& a = command.args[i];
    args[i] = a.address();
    bytes[i] = a.buffer || a.host_data ? a.memory_nbytes()
               : a.kind == ParamKind::threadgroup_memory ? a.threadgroup_length : a.bytes.size();
    if (a.kind == ParamKind::threadgroup_memory) threadgroup_bytes += a.threadgroup_length;
  }

  int fault = 0;
  char fault_message[512];  // written (NUL-terminated) by checked kernel code along with `fault`
  fault_message[0] = '\0';
  // Every field is set below (a field added to the ABI must be too): zeroing it first with
  // `launch{}` compiles to a `rep stos`, whose start-up a 1-element call pays on every call.
  metalcall_cpu_launch launch;
  launch.args = args;
  launch.arg_bytes = bytes;
  launch.fault = &fault;
  launch.fault_message = fault_message;
  launch.fault_capacity = sizeof fault_message;
  launch.threadgroup_bytes = threadgroup_bytes;
  launch.simd_width = simd_width_of(command);
  launch.threadgroup_limit = command.threadgroup_memory_limit;  // 0: the prelude's 32 KiB
  launch.poison_threadgroup = command.poison_threadgroup || poison_uninitialized() ? 1u : 0u;  // (metal_poison.h)
  for (int d = 0; d < 3; ++d) {
    launch.grid[d] = command.grid[d];
    launch.group[d] = command.threadgroup[d];
    // In 64 bits: a grid near 2^32 plus a threadgroup would wrap in 32. One group needs no division.
    launch.groups[d] = command.grid[d] != 0 && command.grid[d] <= command.threadgroup[d]
                           ? 1u
                           : static_cast<std::uint32_t>((std::uint64_t(command.grid[d]) + command.threadgroup[d] - 1) /
                                                        command.threadgroup[d]);
  }
  const std::uint64_t groups = std::uint64_t(launch.groups[0]) * launch.groups[1] * launch.groups[2];
  WorkerPool& pool = WorkerPool::instance();
  // One threadgroup (the common tiny call) runs on the calling thread: nothing to plan.
  const bool alone = one_group(command);
  const Plan planned = alone ? Plan{} : plan(command);
  const bool pooled = planned.pooled;
  const unsigned width = pooled ? planned.width : 1;
  if (program.uses_fibers()) {
    // Kernel code cannot report a failure to map stacks: do it here, on every worker's state.
    const unsigned threads = command.threadgroup[0] * command.threadgroup[1] * command.threadgroup[2];
    for (unsigned w = 0; w < width; ++w) WorkerState::of(w).reserve_fibers(threads);
  }
  // About 8 chunks per worker: each worker takes its own part of the grid (see
  // WorkerPool) in chunks, and the chunks left when it is done are what others can
  // steal to balance uneven groups or a late worker. Measured work keeps them between
  // kMinChunkNs and kMaxChunkNs. One chunk runs on the calling thread alone.
  std::uint64_t chunk = groups;
  if (pooled) {
    chunk = std::max<std::uint64_t>(1, groups / (std::uint64_t(width) * 8));
    const double group_ns = program.ns_per_thread() * command.threadgroup[0] * command.threadgroup[1] *
                            command.threadgroup[2];
    if (group_ns > 0) {
      chunk = std::min(chunk, std::uint64_t(kMaxChunkNs / group_ns) + 1);
      chunk = std::max(chunk, std::uint64_t(kMinChunkNs / group_ns) + 1);
    } else {
      const std::uint64_t group_threads =
          std::uint64_t(command.threadgroup[0]) * command.threadgroup[1] * command.threadgroup[2];
      chunk = std::min(chunk, std::max<std::uint64_t>(1, kUnmeasuredChunkThreads / group_threads));
    }
  }
  // [[threadgroup(i)]] lengths by index: every worker gets its own copy of that memory.
  std::vector<std::size_t> threadgroup_lengths;
  for (const auto& p : program.info().params) {
    if (p.kind != ParamKind::threadgroup_memory) continue;
    if (threadgroup_lengths.size() <= static_cast<std::size_t>(p.binding)) threadgroup_lengths.resize(p.binding + 1);
    threadgroup_lengths[p.binding] = command.args[p.position].threadgroup_length;
  }
  const unsigned busy_count = chunk < groups ? width : 0;
  BusyNs* busy = busy_count ? busy_times(busy_count) : nullptr;
  const bool in_loops = !program.info().loop_free;
  RunControl control(stop, in_loops);
  // Dispatch ids tell a worker's state when to lay out threadgroup memory again; one group without
  // any takes id 0, which always means none (WorkerState::prepare), and spares the shared counter.
  const std::uint64_t dispatch_id = alone && threadgroup_lengths.empty() ? 0 : g_dispatch_ids.fetch_add(1) + 1;
  RangeContext ctx{program.entry(), &launch, dispatch_id, &threadgroup_lengths,
                   busy, &control, in_loops, stack_guard_enabled()};
  const std::int64_t start = now_ns();
  pool.parallel_for(groups, chunk, run_range, &ctx, idle_range, width);
  // Not below start: a thread moved between cores reads another core's counter (synchronised, but
  // only to within its own precision).
  const std::int64_t end = std::max(start, now_ns());
  g_last_end_ns.store(end, std::memory_order_relaxed);
  if (control.stopped()) {
    throw ExecutionError("[cpu] kernel '" + program.info().name + "' was stopped (" + control.reason() +
                         ") before it finished; what it wrote so far stays");
  }
  if (__atomic_load_n(&fault, __ATOMIC_ACQUIRE)) {
    // The kernel wrote the whole message (metal_checked.h; metal_sync.h).
    throw ExecutionError(std::string(program.checked() ? "[cpu checked] " : "[cpu] ") + fault_message);
  }
  // The pool has returned: every worker has left the job, and its time is visible here.
  std::int64_t work_ns = busy_count ? 0 : end - start;
  for (unsigned w = 0; w < busy_count; ++w) work_ns += busy[w].ns;
  if (const std::uint64_t threads = grid_threads(command)) program.record_ns_per_thread(double(work_ns) / double(threads));
  return double(end - start) * 1e-9;
}

DispatchRunner& in_process_runner() {
  struct InProcess final : DispatchRunner {
    using DispatchRunner::estimate;
    CallEstimate estimate(const DispatchCommand& command) override { return cpu::estimate(command); }
    double run(const DispatchCommand& command, const StopRequest& stop) override { return run_dispatch(command, stop); }
  };
  static InProcess* runner = new InProcess;  // used by queues that live for the process
  return *runner;
}

}  // namespace metalcall::cpu
