// What each worker of the pool keeps for kernels: its fibers, its SIMD-group
// scratch and its threadgroup memory, offered to kernel code through the
// metalcall_cpu_worker table (msl/targets/cpu_abi.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/cpu/fiber.hpp"
#include "msl/targets/cpu_abi.hpp"

namespace metalcall::cpu {

class WorkerState {
 public:
  WorkerState();
  WorkerState(const WorkerState&) = delete;
  WorkerState& operator=(const WorkerState&) = delete;

  /** Lays out this worker's threadgroup memory for one dispatch: lengths by [[threadgroup(i)]] index.
   *  Dispatch id 0 always comes with no lengths: such dispatches share one layout (none). */
  void prepare(std::uint64_t dispatch_id, const std::vector<std::size_t>& threadgroup_lengths);
  const metalcall_cpu_worker* table() const { return &table_; }
  /** Maps fiber stacks for groups of `threads` now, where failing can be reported. */
  void reserve_fibers(unsigned threads) { fibers_.reserve(threads); }

  /** The state of worker `index` of the pool (created on first use). */
  static WorkerState& of(unsigned index);

 private:
  FiberGroup fibers_;
  std::unique_ptr<unsigned char[]> simd_scratch_;
  std::unique_ptr<unsigned char[]> arena_;
  std::size_t arena_bytes_ = 0;
  std::vector<void*> threadgroup_pointers_;
  std::uint64_t prepared_for_ = ~std::uint64_t(0);
  metalcall_cpu_worker table_{};
};

}  // namespace metalcall::cpu
