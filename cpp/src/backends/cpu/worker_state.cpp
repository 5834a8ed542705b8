#include "backends/cpu/worker_state.hpp"

#include <atomic>
#include <cstring>
#include <mutex>
#include <new>

#include "backends/cpu/fork_guard.hpp"
#include "backends/cpu/kernel_stop.hpp"
#include "backends/cpu/stack_limits.hpp"
#include "backends/cpu/worker_pool.hpp"

namespace metalcall::cpu {

namespace {

void run_group(void* fibers, unsigned count, unsigned simd_width, void (*body)(void*, unsigned), void* ctx) {
  auto* group = static_cast<FiberGroup*>(fibers);
  group->run(count, reinterpret_cast<FiberGroup::Body>(body), ctx, simd_width);
  if (group->abandoned()) leave_kernel();  // a fiber left a stopped kernel: leave the chunk too
}

constexpr std::size_t kAlign = 64;

}  // namespace

WorkerState::WorkerState() : fibers_(kFiberStackBytes), simd_scratch_(new unsigned char[msl::kCpuSimdScratchBytes + kAlign]) {
  table_.fibers = &fibers_;
  table_.run_group = run_group;
  table_.barrier = metalcall_fiber_barrier;
  table_.simd_barrier = metalcall_fiber_simd_barrier;
  table_.current_thread = fibers_.current_index_address();
  table_.simd_meet = metalcall_fiber_simd_meet;
  table_.simd_tokens = fibers_.simd_tokens();
  table_.barrier_at = metalcall_fiber_barrier_at;
  static_assert(FiberGroup::kContextSlots == metalcall_cpu_simd_context_slots, "one layout of the calls");
  table_.simd_context = reinterpret_cast<unsigned long long*>(fibers_.simd_context());
  auto* scratch = simd_scratch_.get();
  scratch += (kAlign - reinterpret_cast<std::uintptr_t>(scratch) % kAlign) % kAlign;
  std::memset(scratch, 0, msl::kCpuSimdScratchBytes);
  table_.simd_scratch = scratch;
}

void WorkerState::prepare(std::uint64_t dispatch_id, const std::vector<std::size_t>& lengths) {
  if (prepared_for_ == dispatch_id) return;
  prepared_for_ = dispatch_id;
  if (lengths.empty()) {  // most kernels: no threadgroup memory to lay out
    threadgroup_pointers_.clear();
    table_.threadgroup_memory = threadgroup_pointers_.data();
    return;
  }
  std::size_t total = 0;
  for (auto n : lengths) total += (n + kAlign - 1) / kAlign * kAlign;
  if (total + kAlign > arena_bytes_) {
    arena_bytes_ = total + kAlign;
    arena_.reset(new unsigned char[arena_bytes_]);
  }
  threadgroup_pointers_.assign(lengths.size(), nullptr);
  auto* base = arena_ ? arena_.get() : nullptr;
  if (base) base += (kAlign - reinterpret_cast<std::uintptr_t>(base) % kAlign) % kAlign;
  std::size_t offset = 0;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    if (!lengths[i]) continue;
    threadgroup_pointers_[i] = base + offset;
    offset += (lengths[i] + kAlign - 1) / kAlign * kAlign;
  }
  table_.threadgroup_memory = threadgroup_pointers_.data();
}

namespace {
// One slot per pool worker. Not a function-local static: a fork while another
// thread initialises it would leave the child waiting on its guard forever.
std::atomic<std::vector<std::unique_ptr<WorkerState>>*> g_states{nullptr};
std::mutex g_states_mutex;  // creating the slots and the states in them
// In a forked child a worker's state may be mid-run (its thread is gone): the
// child's new pool gets fresh states (the old ones leak). Registered when the
// library loads, so that no fork can come before it.
[[maybe_unused]] const bool g_states_reset = (reset_on_fork(&g_states,
                                           [](void*) {
                                             g_states.store(nullptr, std::memory_order_relaxed);
                                             new (&g_states_mutex) std::mutex;
                                           }),
                             true);
}  // namespace

WorkerState& WorkerState::of(unsigned index) {
  auto* states = g_states.load(std::memory_order_acquire);
  if (!states) {
    std::lock_guard<std::mutex> lock(g_states_mutex);
    states = g_states.load(std::memory_order_acquire);
    if (!states) {
      states = new std::vector<std::unique_ptr<WorkerState>>(WorkerPool::instance().size());
      g_states.store(states, std::memory_order_release);
    }
  }
  // A worker index is used by one thread at a time.
  auto& slot = (*states)[index];
  if (!slot) {
    std::lock_guard<std::mutex> lock(g_states_mutex);
    if (!slot) slot = std::make_unique<WorkerState>();
  }
  return *slot;
}

}  // namespace metalcall::cpu
