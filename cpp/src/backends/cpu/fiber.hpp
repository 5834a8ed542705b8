// Fibers for the threads of one threadgroup on the CPU backend (DESIGN.md §3,
// "CPU execution"). A threadgroup runs wholly on one worker OS thread; kernels
// that use threadgroup_barrier or SIMD-group functions run each logical thread
// as a fiber so that all of them can stop at a barrier and let the others
// catch up. Kernels without barriers do not use this at all.
//
// The context switch is hand-written assembly (fiber_switch_x86_64.S,
// fiber_switch_arm64.S) that saves only the callee-saved registers: a few ns,
// no system call (unlike swapcontext), no Boost.
//
// Rules for the code that runs as a fiber (the kernel body):
//  - it must not throw: an exception leaving body() terminates the process
//    (exceptions never cross a context switch);
//  - it must not change the floating-point control state (rounding, flush to
//    zero): that state is the OS thread's, shared by all fibers, and a switch
//    does not save it (MSL cannot change it);
//  - it must stay within the stack size given to the constructor: overflow
//    hits a PROT_NONE guard page and faults instead of corrupting memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace metalcall {
namespace cpu {

class FiberGroup {
 public:
  static constexpr uint32_t kMaxFibers = 1024;       // MSL's limit on threads per threadgroup
  static constexpr uint32_t kDefaultSimdWidth = 32;  // threads_per_simdgroup on Apple GPUs
  static constexpr size_t kMinStackBytes = 16 * 1024;  // room for a signal frame (AVX-512 state)
  static constexpr size_t kMaxStackBytes = size_t(256) << 20;

  using Body = void (*)(void* ctx, uint32_t thread_index);

  // One per worker OS thread. stack_bytes is rounded up to whole pages; it
  // throws std::invalid_argument outside [kMinStackBytes, kMaxStackBytes] or
  // for a simd_width outside [1, kMaxFibers].
  explicit FiberGroup(size_t stack_bytes = 64 * 1024, uint32_t simd_width = kDefaultSimdWidth);
  ~FiberGroup();
  FiberGroup(const FiberGroup&) = delete;
  FiberGroup& operator=(const FiberGroup&) = delete;

  // Runs body(ctx, i) for every i in [0, count) as fibers on the calling
  // thread; returns when all have returned. simd_width 0 means the
  // constructor's. Stacks are mapped on the first run that needs them and kept
  // for later runs. Throws, before any fiber starts: std::invalid_argument for
  // count > kMaxFibers, a null body or a bad simd_width; std::logic_error when
  // called from inside its own run; std::system_error when stacks cannot be
  // mapped (each stack is two kernel mappings: see vm.max_map_count).
  void run(uint32_t count, Body body, void* ctx, uint32_t simd_width = 0);

  // Maps the stacks for up to count fibers now, so that run() itself never
  // maps (and so never throws std::system_error). run() is reached from
  // kernel code, which may not be able to pass an exception through. Throws
  // std::invalid_argument for count > kMaxFibers, std::system_error on failure.
  void reserve(uint32_t count);

  // Waiting, at barriers and SIMD-group functions (docs/design.md, "SIMD-group functions"). A
  // fiber waits at a site: a number that orders the places it can wait at (a SIMD-group
  // function's or a barrier's line in the kernel's source, then which function), inside its
  // calls: its place is the marks of the calls it is in (simd_context: the lines of the calls
  // of the source's functions that led there, outermost first) then the site, compared in that
  // order, so that a function's lines count where it is called from. A SIMD-group
  // (fibers [k*width, (k+1)*width) for the caller's k; the last may be short) whose fibers
  // that have not returned all wait is *settled*; its *front* is those at its lowest site.
  //  - simd_meet(site): when the caller's SIMD-group is settled with its front at a
  //    simd_meet, the front goes on, each given the same new token (simd_tokens()[lane]):
  //    they are that call's active lanes. The others keep waiting. Returns the caller's token.
  //  - barrier_at(site): when every SIMD-group with a fiber that has not returned is settled
  //    with its front at a barrier, every fiber waiting at a barrier goes on (lanes of a
  //    SIMD-group that skipped a branch holding the barrier wait further on, as on the GPU).
  uint32_t simd_meet(uint64_t site);
  void barrier_at(uint64_t site);
  void barrier() { barrier_at(kGroupSite); }
  void simd_barrier() { simd_meet(kInternalSite); }
  static constexpr uint64_t kLeaveSite = 0;     // the end of an exchange: lowest, so first
  static constexpr uint64_t kInternalSite = 1;  // the prelude's own SIMD-group syncs
  static constexpr uint64_t kGroupSite = 2;     // barrier() without a site
  // Each fiber's token from its last simd_meet (0 before any): kernels read it inline. A
  // token with kEveryLane set went to every lane of the SIMD-group (none returned), whose
  // entries here are then not written.
  const uint32_t* simd_tokens() const { return tokens_.get(); }
  static constexpr uint32_t kEveryLane = 0x80000000u;
  // Each fiber's calls, kContextSlots words from fiber i * kContextSlots: how deep it is, then
  // the mark of each call (outermost first; those past kContextSlots - 1 are not kept). Kernel
  // code pushes and pops them inline; run() empties them.
  static constexpr uint32_t kContextSlots = 8;
  uint64_t* simd_context() { return context_.get(); }

  // Ends the run from inside one of its fibers, for good (a stopped kernel:
  // backends/cpu/kernel_stop.hpp): every fiber is dropped where it stands (the next
  // run starts them afresh on the same stacks) and run() returns; abandoned() is
  // then true until the next run. Call it only from a fiber of this group.
  [[noreturn]] void abandon();
  bool abandoned() const { return abandoned_; }

  uint32_t current_index() const { return cur_; }
  // Where the running fiber's index lives: kernels read it inline (it changes only inside
  // barrier(), simd_barrier() and run(), which kernels reach through calls).
  const uint32_t* current_index_address() const { return &cur_; }
  static FiberGroup* current();  // the group running on this OS thread, or nullptr
  // The lowest usable address of the running fiber's stack (its guard page lies just below),
  // or nullptr outside run(): the stack guard's test for an overflow (stack_guard.hpp).
  const void* running_stack_low() const {
    return in_run_ && cur_ < count_ && fibers_ ? stack_lo(fibers_[cur_].stack) : nullptr;
  }

  // How many times the last run found every live fiber waiting at barriers
  // that could never complete and released them all rather than deadlock (a
  // safety net: since SIMD-group waits give way to barrier(), no known kernel
  // gets here). Non-zero means the kernel's barriers diverged.
  uint32_t forced_releases() const { return forced_; }

  size_t stack_bytes() const { return usable_; }  // every fiber has at least this (whole pages)
  uint32_t simd_width() const { return default_width_; }
  uint32_t stacks_mapped() const { return mapped_; }

 private:
  struct Fiber {
    void* sp;                // saved stack pointer while switched out
    const uint32_t* gen_ptr; // the fiber is runnable iff *gen_ptr != gen
    uint32_t gen;
    uint16_t simd;           // its SIMD-group
    uint16_t stack;          // the stack it runs on (may be a finished fiber's)
    uint64_t site;           // where it waits in simd_meet
  };
  struct Simd {
    uint32_t arrived;  // fibers waiting at this group's simd_meet
    uint32_t at_group; // fibers of this group waiting at a barrier
    uint32_t live;     // fibers of this group that have not returned
    uint32_t gen;      // bumped when every waiter goes on
    uint32_t first;    // the first waiter
    bool mixed;        // some waiter waits at another place
    bool at_barrier;   // settled, its front at a barrier
    uint32_t token;    // the token of its last release by generation bump
  };

  [[noreturn]] static void entry(void* self) noexcept;
  uint32_t next_runnable() const;
  void block();
  uint32_t finish();
  void switch_to(uint32_t j, bool dying);
  void* start_frame(uint32_t stack);
  void force_release();
  void settle(uint32_t g);
  void release_front(uint32_t g, uint32_t front);
  bool same_place(uint32_t a, uint32_t b) const;
  bool before(uint32_t a, uint32_t b) const;
  void barrier_check();
  void barrier_release();
  void map_stacks(uint32_t count);
  char* stack_lo(uint32_t stack) const { return stacks_[stack]; }
  size_t stack_span() const { return usable_ + colour_span_; }

  // Hot state first: touched on every barrier.
  uint32_t cur_ = 0;
  uint32_t count_ = 0;
  uint32_t live_ = 0;
  uint32_t live_groups_ = 0;        // SIMD-groups with a fiber that has not returned
  uint32_t groups_at_barrier_ = 0;  // of those, settled with their front at a barrier
  uint32_t tg_waiting_ = 0;         // fibers waiting at a barrier
  uint32_t tg_gen_ = 0;
  bool in_run_ = false;
  bool abandoned_ = false;
  Body body_ = nullptr;
  void* ctx_ = nullptr;
  std::unique_ptr<Fiber[]> fibers_;
  std::unique_ptr<Simd[]> simd_;
  std::unique_ptr<uint32_t[]> tokens_;
  std::unique_ptr<uint64_t[]> context_;
  uint32_t next_token_ = 0;
  uint32_t width_ = 0;
  void* sched_sp_ = nullptr;  // the thread's own context, parked inside run()

  uint32_t forced_ = 0;
  uint32_t groups_ = 0;
  uint32_t default_width_;
  uint32_t mapped_ = 0;
  size_t usable_;
  size_t page_;
  size_t colour_span_;  // extra room above each stack for cache colouring
  std::unique_ptr<char*[]> stacks_;  // lowest usable byte of each stack (guard page below)

  // AddressSanitizer bookkeeping (unused in other builds).
  [[maybe_unused]] void* sched_fake_ = nullptr;
  [[maybe_unused]] const void* sched_bottom_ = nullptr;
  [[maybe_unused]] size_t sched_size_ = 0;
};

}  // namespace cpu
}  // namespace metalcall

// C entry points for run-time-compiled kernel code, which reaches them through
// a function-pointer table (the kernel .so cannot link against the extension).
extern "C" {
void metalcall_fiber_barrier(void* group);
void metalcall_fiber_simd_barrier(void* group);
unsigned metalcall_fiber_simd_meet(void* group, unsigned long long site);
void metalcall_fiber_barrier_at(void* group, unsigned long long site);
}
