// FiberGroup: one fiber per logical thread of a threadgroup, barriers by
// round-robin switching. See fiber.hpp for the contract.
//
// Scheduling. Fibers form a ring in index order. A fiber that reaches a
// barrier bumps the barrier's arrival counter; unless it is the last to
// arrive it records which generation counter it waits on and switches
// directly to the next runnable fiber in the ring. The last arrival resets
// the counter and bumps the generation, which releases every waiter at once
// without touching them: a fiber is runnable iff *gen_ptr != gen. In the
// common case (all fibers hit the same barriers) the next fiber in the ring is
// always runnable, so an arrival is O(1): a counter, a compare, one switch.
// Only when fibers wait at different barriers (SIMD-groups at simd_barrier
// while others wait at barrier) does the search skip waiting fibers; it
// never looks at more than count fibers per switch and allocates nothing.
//
// Fibers that have not started yet need no stack of their own until they
// block: when a fiber returns and the next runnable fiber has not started, the
// next one runs on the same stack in a plain loop, with no switch. A group
// whose threads never reach a barrier thus runs as a loop on one stack.
#include "fiber.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <string>
#include <system_error>

#if defined(__SANITIZE_ADDRESS__)
#define MC_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MC_FIBER_ASAN 1
#endif
#endif
#ifndef MC_FIBER_ASAN
#define MC_FIBER_ASAN 0
#endif
#if MC_FIBER_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#if !(defined(__x86_64__) || defined(__aarch64__)) || defined(_WIN32)
#error "FiberGroup supports x86-64 System V and arm64 AAPCS64 only"
#endif

// In fiber_switch_<arch>.S. Hidden, so calls are direct (no PLT) in a .so.
extern "C" {
// Pushes the callee-saved registers on the current stack, stores the stack
// pointer to *save_sp, loads load_sp and pops the registers saved there.
__attribute__((visibility("hidden"))) void metalcall_fiber_switch(void** save_sp, void* load_sp);
// First "return address" of a new fiber: calls fn(arg) with fn and arg taken
// from callee-saved registers that the first switch restored.
__attribute__((visibility("hidden"))) void metalcall_fiber_start();
}

namespace metalcall {
namespace cpu {
namespace {

thread_local FiberGroup* tls_current = nullptr;

// Targets of Fiber::gen_ptr for the states that are not a barrier wait:
// gen is always 0, so "unstarted" is always runnable and "never" never is.
const uint32_t kUnstarted = 1;
const uint32_t kNever = 0;
const uint32_t kReleased = 1;  // a SIMD-group waiter let go on its own (gen 0)
constexpr uint32_t kNone = ~0u;

// Stack tops are page-aligned, so without an offset every fiber's frames
// would sit at the same page offset, i.e. in the same few L1/L2 cache sets.
// Stack k starts (k % kColours) cache lines below its top instead (on a Zen 3
// VM: 18 -> 12 ns per barrier per fiber at 1024 fibers, 12 -> 11 at 256).
constexpr uint32_t kColours = 64;

}  // namespace

FiberGroup::FiberGroup(size_t stack_bytes, uint32_t simd_width)
    : default_width_(simd_width) {
  if (stack_bytes < kMinStackBytes || stack_bytes > kMaxStackBytes)
    throw std::invalid_argument("FiberGroup: stack_bytes " + std::to_string(stack_bytes) +
                                " outside [" + std::to_string(kMinStackBytes) + ", " +
                                std::to_string(kMaxStackBytes) + "]");
  if (simd_width == 0 || simd_width > kMaxFibers)
    throw std::invalid_argument("FiberGroup: simd_width " + std::to_string(simd_width) +
                                " outside [1, 1024]");
  long page = sysconf(_SC_PAGESIZE);
  page_ = page > 0 ? size_t(page) : 4096;
  usable_ = (stack_bytes + page_ - 1) / page_ * page_;
  colour_span_ = (kColours * 64 + page_ - 1) / page_ * page_;
  fibers_.reset(new Fiber[kMaxFibers]());
  simd_.reset(new Simd[kMaxFibers]());
  tokens_.reset(new uint32_t[kMaxFibers]());
  context_.reset(new uint64_t[size_t(kMaxFibers) * kContextSlots]());
  stacks_.reset(new char*[kMaxFibers]());
}

FiberGroup::~FiberGroup() {
  for (uint32_t i = 0; i < mapped_; ++i) munmap(stacks_[i] - page_, stack_span() + page_);
}

FiberGroup* FiberGroup::current() { return tls_current; }

// Maps stacks [mapped_, count). Done in run(), before any fiber starts, so a
// failure is an ordinary exception. Only the pages a fiber touches are ever
// backed by memory. Each stack costs two kernel VMAs (guard + stack); Linux
// allows vm.max_map_count (65530 by default) per process.
void FiberGroup::map_stacks(uint32_t count) {
  int flags = MAP_PRIVATE | MAP_ANONYMOUS;
#ifdef MAP_NORESERVE
  flags |= MAP_NORESERVE;
#endif
#ifdef MAP_STACK
  flags |= MAP_STACK;
#endif
  for (; mapped_ < count; ++mapped_) {
    void* p = mmap(nullptr, stack_span() + page_, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (p == MAP_FAILED)
      throw std::system_error(errno, std::generic_category(), "FiberGroup: mmap of a fiber stack");
    // The guard page lies below the stack: stacks grow down into it.
    if (mprotect(p, page_, PROT_NONE) != 0) {
      int err = errno;
      munmap(p, stack_span() + page_);
      throw std::system_error(err, std::generic_category(), "FiberGroup: guard page");
    }
    stacks_[mapped_] = static_cast<char*>(p) + page_;
  }
}

void FiberGroup::reserve(uint32_t count) {
  if (count > kMaxFibers)
    throw std::invalid_argument("FiberGroup::reserve: " + std::to_string(count) +
                                " threads, more than 1024");
  map_stacks(count);
}

// Builds the frame that metalcall_fiber_switch pops for a fiber that has not
// run yet, at the top of the given stack; returns its stack pointer. The top
// is 64-byte aligned, so the ABI's 16-byte alignment holds when entry()
// starts, and at least usable_ bytes lie below it.
void* FiberGroup::start_frame(uint32_t stack) {
  char* top = stack_lo(stack) + stack_span() - (stack % kColours) * 64;
#if MC_FIBER_ASAN
  // Frames abandoned by a previous run on this stack left poisoned redzones.
  ASAN_UNPOISON_MEMORY_REGION(stack_lo(stack), stack_span());
#endif
#if defined(__x86_64__)
  // Lowest first: r15, r14, r13, r12, rbx, rbp, return address. After `ret`
  // rsp == top (16-aligned); the trampoline's call then gives entry() the
  // rsp % 16 == 8 that a called function expects.
  uint64_t* f = reinterpret_cast<uint64_t*>(top - 7 * 8);
  f[0] = 0;
  f[1] = 0;
  f[2] = reinterpret_cast<uint64_t>(&FiberGroup::entry);  // r13: fn
  f[3] = reinterpret_cast<uint64_t>(this);                // r12: arg
  f[4] = 0;
  f[5] = 0;  // rbp 0 ends frame-pointer walks
  f[6] = reinterpret_cast<uint64_t>(&metalcall_fiber_start);
#else
  // x19..x28, x29 (fp), x30 (lr), d8..d15: 20 slots, 160 bytes; sp == top
  // (16-aligned) after the switch pops them.
  uint64_t* f = reinterpret_cast<uint64_t*>(top - 20 * 8);
  for (int i = 0; i < 20; ++i) f[i] = 0;
  f[0] = reinterpret_cast<uint64_t>(this);                // x19: arg
  f[1] = reinterpret_cast<uint64_t>(&FiberGroup::entry);  // x20: fn
  f[11] = reinterpret_cast<uint64_t>(&metalcall_fiber_start);  // x30
#endif
  return f;
}

void FiberGroup::run(uint32_t count, Body body, void* ctx, uint32_t simd_width) {
  if (count == 0) return;
  if (!body) throw std::invalid_argument("FiberGroup::run: null body");
  if (count > kMaxFibers)
    throw std::invalid_argument("FiberGroup::run: " + std::to_string(count) +
                                " threads, more than 1024");
  uint32_t width = simd_width ? simd_width : default_width_;
  if (width > kMaxFibers)
    throw std::invalid_argument("FiberGroup::run: simd_width " + std::to_string(width) +
                                " outside [1, 1024]");
  if (in_run_) throw std::logic_error("FiberGroup::run called from inside its own run");
  map_stacks(count);

  count_ = count;
  body_ = body;
  ctx_ = ctx;
  live_ = count;
  abandoned_ = false;
  tg_waiting_ = 0;
  groups_at_barrier_ = 0;
  forced_ = 0;
  groups_ = (count + width - 1) / width;
  width_ = width;
  next_token_ = 0;
  for (uint32_t g = 0; g < groups_; ++g) {
    simd_[g].arrived = 0;
    simd_[g].at_group = 0;
    simd_[g].at_barrier = false;
    simd_[g].live = (g + 1 < groups_) ? width : count - g * width;
  }
  live_groups_ = groups_;
  for (uint32_t i = 0; i < count; ++i) tokens_[i] = 0, context_[size_t(i) * kContextSlots] = 0;
  for (uint32_t i = 0, g = 0, k = 0; i < count; ++i) {
    fibers_[i].gen_ptr = &kUnstarted;
    fibers_[i].gen = 0;
    fibers_[i].simd = uint16_t(g);
    if (++k == width) k = 0, ++g;
  }

  // Fiber 0 starts on stack 0; the others start when the ring reaches them.
  Fiber& f0 = fibers_[0];
  f0.gen_ptr = &kNever;
  f0.stack = 0;
  f0.sp = start_frame(0);
  cur_ = 0;

  FiberGroup* outer = tls_current;  // a fiber of another group may call run()
  tls_current = this;
  in_run_ = true;
#if MC_FIBER_ASAN
  sched_bottom_ = nullptr;  // entry() records the thread's stack on first start
  __sanitizer_start_switch_fiber(&sched_fake_, stack_lo(0), stack_span());
#endif
  metalcall_fiber_switch(&sched_sp_, f0.sp);  // back here when the last fiber returns
#if MC_FIBER_ASAN
  __sanitizer_finish_switch_fiber(sched_fake_, nullptr, nullptr);
#endif
  in_run_ = false;
  tls_current = outer;
}

void FiberGroup::entry(void* self) noexcept {
  auto* g = static_cast<FiberGroup*>(self);
#if MC_FIBER_ASAN
  const void* bottom;
  size_t size;
  __sanitizer_finish_switch_fiber(nullptr, &bottom, &size);
  if (!g->sched_bottom_) {  // the first fiber of a run is entered from run()
    g->sched_bottom_ = bottom;
    g->sched_size_ = size;
  }
#endif
  uint32_t i = g->cur_;
  for (;;) {
    g->body_(g->ctx_, i);
    i = g->finish();  // returns only to run an unstarted fiber on this stack
  }
}

// The next runnable fiber after the current one in ring order, ending with
// the current one itself; kNone when every live fiber is waiting.
uint32_t FiberGroup::next_runnable() const {
  uint32_t j = cur_;
  for (uint32_t n = count_; n != 0; --n) {
    if (++j == count_) j = 0;
    const Fiber& f = fibers_[j];
    if (*f.gen_ptr != f.gen) return j;
  }
  return kNone;
}

// Every live fiber waits and none can be released (a safety net: no known kernel gets here).
// Release them all rather than hang the worker thread.
void FiberGroup::force_release() {
  ++forced_;
  if (tg_waiting_) barrier_release();
  for (uint32_t g = 0; g < groups_; ++g)
    while (simd_[g].arrived) release_front(g, kNone);
}

// Whether fibers a and b wait at the same place: the same calls, then the same site.
bool FiberGroup::same_place(uint32_t a, uint32_t b) const {
  if (fibers_[a].site != fibers_[b].site) return false;
  const uint64_t* ca = &context_[size_t(a) * kContextSlots];
  const uint64_t* cb = &context_[size_t(b) * kContextSlots];
  if (ca[0] != cb[0]) return false;
  const uint64_t depth = ca[0] < kContextSlots - 1 ? ca[0] : kContextSlots - 1;
  for (uint64_t k = 1; k <= depth; ++k)
    if (ca[k] != cb[k]) return false;
  return true;
}

// Whether fiber a's place comes before fiber b's: their calls' marks, then the site where a
// fiber's calls end (a call's mark sorts before every site of its line: marks and sites
// differ, prelude/metal_sync.h), compared from the outermost.
bool FiberGroup::before(uint32_t a, uint32_t b) const {
  const uint64_t* ca = &context_[size_t(a) * kContextSlots];
  const uint64_t* cb = &context_[size_t(b) * kContextSlots];
  const uint64_t da = ca[0] < kContextSlots - 1 ? ca[0] : kContextSlots - 1;
  const uint64_t db = cb[0] < kContextSlots - 1 ? cb[0] : kContextSlots - 1;
  for (uint64_t k = 0;; ++k) {
    const uint64_t x = k < da ? ca[k + 1] : fibers_[a].site;
    const uint64_t y = k < db ? cb[k + 1] : fibers_[b].site;
    if (x != y) return x < y;
    if (k >= da || k >= db) return da < db;
  }
}

// Every fiber waiting at a barrier goes on.
void FiberGroup::barrier_release() {
  tg_waiting_ = 0;
  ++tg_gen_;
  groups_at_barrier_ = 0;
  for (uint32_t g = 0; g < groups_; ++g) simd_[g].at_group = 0, simd_[g].at_barrier = false;
}

void FiberGroup::barrier_check() {
  if (tg_waiting_ && groups_at_barrier_ == live_groups_) barrier_release();
}

// The fibers of SIMD-group g waiting at simd_meet at fiber front's place (all of them for
// kNone) go on, with a new token.
void FiberGroup::release_front(uint32_t g, uint32_t front) {
  Simd& s = simd_[g];
  const uint32_t token = ++next_token_;
  const uint32_t first = g * width_, end = first + width_ < count_ ? first + width_ : count_;
  bool rest = false;
  for (uint32_t i = first; i < end; ++i) {
    Fiber& f = fibers_[i];
    if (f.gen_ptr != &s.gen || f.gen != s.gen) continue;
    if (front == kNone || same_place(i, front)) {
      tokens_[i] = token;
      f.gen_ptr = &kReleased;
      f.gen = 0;
      --s.arrived;
    } else if (!rest) {
      rest = true;
      s.first = i;
      s.mixed = false;
    } else if (!same_place(i, s.first)) {
      s.mixed = true;
    }
  }
}

// SIMD-group g is settled (every fiber that has not returned waits): its front goes on, or
// it waits at the barrier.
void FiberGroup::settle(uint32_t g) {
  Simd& s = simd_[g];
  const uint32_t first = g * width_, end = first + width_ < count_ ? first + width_ : count_;
  if (s.arrived == 0) {  // all at barriers
    if (!s.at_barrier) s.at_barrier = true, ++groups_at_barrier_;
    barrier_check();
    return;
  }
  if (s.at_group == 0 && !s.mixed) {  // all at one SIMD-group call (uniform code): one bump lets them go
    // Every lane of the group there (none returned): a token that says so, and no lane's to write.
    if (s.live == end - first) {
      s.token = ++next_token_ | kEveryLane;
    } else {
      s.token = ++next_token_;
      for (uint32_t i = first; i < end; ++i) {
        const Fiber& f = fibers_[i];
        if (f.gen_ptr == &s.gen && f.gen == s.gen) tokens_[i] = s.token;
      }
    }
    s.arrived = 0;
    ++s.gen;
    return;
  }
  uint32_t lowest = kNone;
  bool barrier_front = false;
  for (uint32_t i = first; i < end; ++i) {
    const Fiber& f = fibers_[i];
    const bool meets = f.gen_ptr == &s.gen && f.gen == s.gen;
    const bool waits = f.gen_ptr == &tg_gen_ && f.gen == tg_gen_;
    if ((meets || waits) && (lowest == kNone || before(i, lowest))) lowest = i, barrier_front = waits;
  }
  if (barrier_front) {
    if (!s.at_barrier) s.at_barrier = true, ++groups_at_barrier_;
    barrier_check();
    return;
  }
  release_front(g, lowest);
}

void FiberGroup::switch_to(uint32_t j, bool dying) {
  Fiber& from = fibers_[cur_];
  Fiber& to = fibers_[j];
  if (to.gen_ptr == &kUnstarted) {
    to.gen_ptr = &kNever;
    to.stack = uint16_t(j);
    to.sp = start_frame(j);
  }
  cur_ = j;
#if MC_FIBER_ASAN
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(dying ? nullptr : &fake, stack_lo(to.stack), stack_span());
  metalcall_fiber_switch(&from.sp, to.sp);
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#else
  (void)dying;
  metalcall_fiber_switch(&from.sp, to.sp);
#endif
}

// The current fiber waits (its gen_ptr/gen are set): run someone else.
void FiberGroup::block() {
  uint32_t j = next_runnable();
  if (j == kNone) {
    force_release();
    j = next_runnable();  // now at least the current fiber is runnable
  }
  if (j != cur_) switch_to(j, false);
}

void FiberGroup::barrier_at(uint64_t site) {
  if (!in_run_) return;
  Fiber& f = fibers_[cur_];
  Simd& s = simd_[f.simd];
  f.site = site;
  f.gen_ptr = &tg_gen_;
  f.gen = tg_gen_;
  ++tg_waiting_;
  if (++s.at_group + s.arrived == s.live) settle(f.simd);
  if (*f.gen_ptr == f.gen) block();
}

uint32_t FiberGroup::simd_meet(uint64_t site) {
  if (!in_run_) return ++next_token_;  // no fibers: a lane alone
  Fiber& f = fibers_[cur_];
  Simd& s = simd_[f.simd];
  f.site = site;
  if (s.arrived++ == 0) {
    s.first = cur_;
    s.mixed = false;
  } else if (!s.mixed && !same_place(cur_, s.first)) {
    s.mixed = true;
  }
  f.gen_ptr = &s.gen;
  f.gen = s.gen;
  if (s.arrived + s.at_group == s.live) settle(f.simd);
  if (*f.gen_ptr == f.gen) block();
  // Let go alone (release_front) or with the whole group (settle's generation bump).
  return f.gen_ptr == &kReleased ? tokens_[cur_] : s.token;
}

void FiberGroup::abandon() {
  abandoned_ = true;
  live_ = 0;
  Fiber& f = fibers_[cur_];
#if MC_FIBER_ASAN
  __sanitizer_start_switch_fiber(nullptr, sched_bottom_, sched_size_);
#endif
  metalcall_fiber_switch(&f.sp, sched_sp_);  // into run(), which returns
  __builtin_unreachable();
}

// The current fiber's body returned. Returns the index of an unstarted fiber
// to run on this same stack, or switches away for good.
uint32_t FiberGroup::finish() {
  Fiber& f = fibers_[cur_];
  f.gen_ptr = &kNever;
  f.gen = 0;
  --live_;
  Simd& s = simd_[f.simd];
  --s.live;
  // Its leaving may settle its SIMD-group, or complete a barrier the others wait at.
  if (s.live == 0) --live_groups_, barrier_check();
  else if (s.arrived + s.at_group == s.live) settle(f.simd);

  if (live_ == 0) {  // all done: back to run()
#if MC_FIBER_ASAN
    __sanitizer_start_switch_fiber(nullptr, sched_bottom_, sched_size_);
#endif
    metalcall_fiber_switch(&f.sp, sched_sp_);
    __builtin_unreachable();
  }
  uint32_t j = next_runnable();
  if (j == kNone) {
    force_release();
    j = next_runnable();
  }
  Fiber& n = fibers_[j];
  if (n.gen_ptr == &kUnstarted) {  // reuse this stack: no switch, no new frame
    n.gen_ptr = &kNever;
    n.stack = f.stack;
    cur_ = j;
    return j;
  }
  switch_to(j, true);
  __builtin_unreachable();
}

}  // namespace cpu
}  // namespace metalcall

extern "C" void metalcall_fiber_barrier(void* group) {
  static_cast<metalcall::cpu::FiberGroup*>(group)->barrier();
}

extern "C" void metalcall_fiber_simd_barrier(void* group) {
  static_cast<metalcall::cpu::FiberGroup*>(group)->simd_barrier();
}

extern "C" void metalcall_fiber_barrier_at(void* group, unsigned long long site) {
  static_cast<metalcall::cpu::FiberGroup*>(group)->barrier_at(site);
}

extern "C" unsigned metalcall_fiber_simd_meet(void* group, unsigned long long site) {
  return static_cast<metalcall::cpu::FiberGroup*>(group)->simd_meet(site);
}
