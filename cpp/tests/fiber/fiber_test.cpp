// Tests for metalcall::cpu::FiberGroup (cpp/src/backends/cpu/fiber.*).
// Standalone: built and run by run.sh. Ends with "N passed, N failed".
#include "fiber.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

using metalcall::cpu::FiberGroup;

namespace {

int g_check_failures = 0;

#define CHECK(cond)                                                           \
  do {                                                                        \
    if (!(cond)) {                                                            \
      if (g_check_failures < 20)                                              \
        std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, \
                     #cond);                                                  \
      ++g_check_failures;                                                     \
    }                                                                         \
  } while (0)

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAsan = true;
#else
constexpr bool kAsan = false;
#endif
#else
constexpr bool kAsan = false;
#endif

// ---------------------------------------------------------------- reductions

struct ReduceCtx {
  FiberGroup* g;
  uint32_t count;
  uint64_t* a;
  bool use_shim;
};

void reduce_body(void* p, uint32_t i) {
  auto* c = static_cast<ReduceCtx*>(p);
  c->a[i] = uint64_t(i) * 2654435761u % 1000003u;
  uint32_t pow2 = 1;
  while (pow2 < c->count) pow2 <<= 1;
  for (uint32_t s = pow2 / 2; s > 0; s /= 2) {
    if (c->use_shim)
      metalcall_fiber_barrier(c->g);
    else
      c->g->barrier();
    if (i < s && i + s < c->count) c->a[i] += c->a[i + s];
  }
}

uint64_t expected_sum(uint32_t count) {
  uint64_t sum = 0;
  for (uint32_t i = 0; i < count; ++i) sum += uint64_t(i) * 2654435761u % 1000003u;
  return sum;
}

bool reduce_once(FiberGroup& g, uint32_t count, bool use_shim = false) {
  std::vector<uint64_t> a(count);
  ReduceCtx c{&g, count, a.data(), use_shim};
  g.run(count, reduce_body, &c);
  return a[0] == expected_sum(count) && g.forced_releases() == 0;
}

void test_reduction() {
  FiberGroup g;
  for (uint32_t n : {1u, 2u, 3u, 31u, 32u, 33u, 100u, 255u, 256u, 1000u, 1023u, 1024u})
    CHECK(reduce_once(g, n));
  CHECK(reduce_once(g, 1024, /*use_shim=*/true));
}

// ------------------------------------------------------------- prefix scan

struct ScanCtx {
  FiberGroup* g;
  uint32_t count;
  uint32_t* a;
};

void scan_body(void* p, uint32_t i) {
  auto* c = static_cast<ScanCtx*>(p);
  c->a[i] = i % 7 + 1;
  for (uint32_t off = 1; off < c->count; off *= 2) {
    c->g->barrier();
    uint32_t v = i >= off ? c->a[i - off] : 0;
    c->g->barrier();
    c->a[i] += v;
  }
}

void test_prefix_scan() {
  FiberGroup g;
  for (uint32_t n : {1u, 37u, 512u, 1024u}) {
    std::vector<uint32_t> a(n);
    ScanCtx c{&g, n, a.data()};
    g.run(n, scan_body, &c);
    uint32_t sum = 0;
    bool ok = true;
    for (uint32_t i = 0; i < n; ++i) ok &= a[i] == (sum += i % 7 + 1);
    CHECK(ok);
  }
}

// --------------------------------------------- identity, current(), shims

struct IdCtx {
  FiberGroup* g;
  std::vector<uint32_t> seen;
  int bad = 0;
};

void id_body(void* p, uint32_t i) {
  auto* c = static_cast<IdCtx*>(p);
  if (FiberGroup::current() != c->g || c->g->current_index() != i) ++c->bad;
  ++c->seen[i];
  if (i % 3 == 0) {
    metalcall_fiber_simd_barrier(c->g);
    if (c->g->current_index() != i) ++c->bad;
  }
  if (i % 2 == 0) {
    c->g->barrier();
    if (FiberGroup::current() != c->g || c->g->current_index() != i) ++c->bad;
  }
}

void test_identity() {
  FiberGroup g;
  CHECK(FiberGroup::current() == nullptr);
  g.barrier();  // outside run: no-op
  g.simd_barrier();
  for (uint32_t n : {1u, 5u, 64u, 1024u}) {
    IdCtx c;
    c.g = &g;
    c.seen.assign(n, 0);
    g.run(n, id_body, &c);
    CHECK(c.bad == 0);
    bool once = true;
    for (uint32_t s : c.seen) once &= s == 1;
    CHECK(once);
  }
  CHECK(FiberGroup::current() == nullptr);
  g.run(0, id_body, nullptr);  // nothing to run
}

void test_invalid_arguments() {
  bool threw = false;
  try {
    FiberGroup g;
    g.run(1025, id_body, nullptr);
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  CHECK(threw);
  threw = false;
  try {
    FiberGroup g(1024);
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  CHECK(threw);
  threw = false;
  try {
    FiberGroup g(64 * 1024, 0);
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  CHECK(threw);
  {
    FiberGroup r;
    r.reserve(300);
    CHECK(r.stacks_mapped() == 300);
    CHECK(reduce_once(r, 300) && r.stacks_mapped() == 300);
    threw = false;
    try {
      r.reserve(2000);
    } catch (const std::invalid_argument&) {
      threw = true;
    }
    CHECK(threw);
  }
  FiberGroup g(20000);  // not a page multiple: rounded up
  CHECK(g.stack_bytes() >= 20000 && g.stack_bytes() % 4096 == 0);
  CHECK(reduce_once(g, 300));
}

// ---------------------------------------------------- early return (group)

// Fiber i takes part in phases [0, stop(i)) and then returns; at each phase
// the barrier must wait for exactly the fibers still taking part.
constexpr uint32_t kPhases = 12;

struct EarlyCtx {
  FiberGroup* g;
  uint32_t count;
  uint32_t (*stop)(uint32_t i);
  std::atomic<uint32_t> arrived[kPhases];
  uint32_t expected[kPhases];
  int bad = 0;
  bool simd = false;
  uint32_t width = 32;
  std::vector<uint32_t> simd_arrived;  // [group * kPhases + phase]
  std::vector<uint32_t> simd_expected;
};

void early_body(void* p, uint32_t i) {
  auto* c = static_cast<EarlyCtx*>(p);
  uint32_t stop = c->stop(i);
  uint32_t k = i / c->width;
  for (uint32_t ph = 0; ph < stop; ++ph) {
    if (c->simd) {
      ++c->simd_arrived[k * kPhases + ph];
      c->g->simd_barrier();
      if (c->simd_arrived[k * kPhases + ph] != c->simd_expected[k * kPhases + ph]) ++c->bad;
    } else {
      ++c->arrived[ph];
      c->g->barrier();
      if (c->arrived[ph] != c->expected[ph]) ++c->bad;
    }
  }
}

void run_early(FiberGroup& g, uint32_t count, uint32_t (*stop)(uint32_t), bool simd,
               uint32_t width) {
  EarlyCtx c;
  c.g = &g;
  c.count = count;
  c.stop = stop;
  c.simd = simd;
  c.width = width;
  uint32_t groups = (count + width - 1) / width;
  c.simd_arrived.assign(groups * kPhases, 0);
  c.simd_expected.assign(groups * kPhases, 0);
  for (uint32_t ph = 0; ph < kPhases; ++ph) {
    c.arrived[ph] = 0;
    c.expected[ph] = 0;
  }
  for (uint32_t i = 0; i < count; ++i)
    for (uint32_t ph = 0; ph < stop(i) && ph < kPhases; ++ph) {
      ++c.expected[ph];
      ++c.simd_expected[(i / width) * kPhases + ph];
    }
  g.run(count, early_body, &c, width);
  CHECK(c.bad == 0);
  CHECK(g.forced_releases() == 0);
}

uint32_t stop_thirds(uint32_t i) { return i % 3 == 0 ? 0 : kPhases; }
uint32_t stop_staggered(uint32_t i) { return (i * 7) % (kPhases + 1); }
uint32_t stop_all_but_last(uint32_t i) { return i == 0 ? 0 : kPhases; }
uint32_t stop_fifths(uint32_t i) { return i % 5 == 0 ? i % 4 : kPhases; }

void test_early_return() {
  FiberGroup g;
  for (uint32_t n : {1u, 2u, 50u, 256u, 1024u}) {
    run_early(g, n, stop_thirds, false, 32);
    run_early(g, n, stop_staggered, false, 32);
    run_early(g, n, stop_all_but_last, false, 32);
  }
}

// Everyone but one fiber waits at a barrier; the last one returns instead.
// Its return must release the others (no deadlock, no forced release).
struct LastCtx {
  FiberGroup* g;
  uint32_t count;
  uint32_t after = 0;
};

void last_returns_body(void* p, uint32_t i) {
  auto* c = static_cast<LastCtx*>(p);
  if (i == c->count - 1) return;
  c->g->barrier();
  ++c->after;
  c->g->barrier();
}

void test_last_returns() {
  FiberGroup g;
  for (uint32_t n : {2u, 33u, 1024u}) {
    LastCtx c{&g, n};
    g.run(n, last_returns_body, &c);
    CHECK(c.after == n - 1);
    CHECK(g.forced_releases() == 0);
  }
}

// ------------------------------------------------------------ SIMD-groups

struct SimdCtx {
  FiberGroup* g;
  uint32_t count, width;
  std::vector<uint32_t> val;
  int bad = 0;
};

uint32_t simd_rounds(uint32_t group) { return 3 * (group % 3 + 1); }

// Each SIMD-group does its own number of rounds, checking after every
// simd_barrier that all its lanes wrote; a group barrier closes. If
// simd_barrier waited for other groups this would deadlock (forced release).
void simd_body(void* p, uint32_t i) {
  auto* c = static_cast<SimdCtx*>(p);
  uint32_t k = i / c->width, lo = k * c->width;
  uint32_t hi = lo + c->width < c->count ? lo + c->width : c->count;
  uint32_t rounds = simd_rounds(k);
  for (uint32_t r = 0; r < rounds; ++r) {
    c->val[i] = r * 4096 + i;
    c->g->simd_barrier();
    for (uint32_t l = lo; l < hi; ++l)
      if (c->val[l] != r * 4096 + l) ++c->bad;
    c->g->simd_barrier();
  }
  c->g->barrier();
  for (uint32_t j = i % 7; j < c->count; j += 97)
    if (c->val[j] != (simd_rounds(j / c->width) - 1) * 4096 + j) ++c->bad;
}

void test_simd_subsets() {
  struct Case { uint32_t count, ctor_width, run_width; };
  const Case cases[] = {{100, 32, 0}, {33, 32, 0}, {31, 32, 0}, {1024, 32, 0}, {1000, 32, 0},
                        {45, 32, 7}, {64, 1, 0}, {200, 32, 1024}, {130, 16, 0}, {129, 32, 64}};
  for (const Case& cs : cases) {
    FiberGroup g(64 * 1024, cs.ctor_width);
    SimdCtx c;
    c.g = &g;
    c.count = cs.count;
    c.width = cs.run_width ? cs.run_width : cs.ctor_width;
    c.val.assign(cs.count, ~0u);
    g.run(cs.count, simd_body, &c, cs.run_width);
    CHECK(c.bad == 0);
    CHECK(g.forced_releases() == 0);
  }
}

void test_simd_early_return() {
  FiberGroup g;
  for (uint32_t n : {70u, 100u, 1024u}) {
    run_early(g, n, stop_fifths, true, 32);
    run_early(g, n, stop_staggered, true, 32);
    run_early(g, n, stop_staggered, true, 5);
  }
}

// Half a SIMD-group at simd_barrier, the rest of the group at barrier: the SIMD-group's
// front (the lower site, simd_barrier's) goes on first and returns; the barrier then has
// every SIMD-group at it. Nothing hangs and nothing is forced.
struct DivCtx {
  FiberGroup* g;
  uint32_t done = 0;
  uint32_t past_barrier = 0;
  uint32_t order_bad = 0;
};

void divergent_body(void* p, uint32_t i) {
  auto* c = static_cast<DivCtx*>(p);
  if (i < 32 && i % 2 == 0) {
    c->g->simd_barrier();
    if (c->past_barrier != 0) ++c->order_bad;  // the barrier's fibers are still waiting
  } else {
    c->g->barrier();
    ++c->past_barrier;
  }
  ++c->done;
}

void test_divergence_released() {
  FiberGroup g;
  DivCtx c{&g};
  g.run(64, divergent_body, &c);
  CHECK(c.done == 64);
  CHECK(c.order_bad == 0);
  CHECK(g.forced_releases() == 0);
  CHECK(reduce_once(g, 256));
}

// Lanes meet by site: those at the lowest site go on with one token, the others wait.
struct SiteCtx {
  FiberGroup* g;
  uint32_t token[64];
  uint32_t order[64];
  uint32_t n = 0;
};

void site_body(void* p, uint32_t i) {
  auto* c = static_cast<SiteCtx*>(p);
  const uint64_t site = i % 3 == 0 ? 500 : (i % 3 == 1 ? 300 : 400);
  c->token[i] = c->g->simd_meet(site);
  c->order[i] = c->n++;
  c->g->simd_meet(FiberGroup::kLeaveSite);
}

void test_meet_by_site() {
  FiberGroup g(64 * 1024, 32);
  SiteCtx c{&g, {}, {}};
  g.run(64, site_body, &c);
  CHECK(g.forced_releases() == 0);
  for (uint32_t i = 0; i < 64; ++i)
    for (uint32_t j = 0; j < 64; ++j) {
      if (i / 32 != j / 32) continue;  // SIMD-groups are independent
      CHECK((c.token[i] == c.token[j]) == (i % 3 == j % 3));
      // Site 300 (i % 3 == 1) before 400 (2) before 500 (0), within a SIMD-group.
      const uint32_t ri = (i % 3 + 2) % 3, rj = (j % 3 + 2) % 3;
      if (ri < rj) CHECK(c.order[i] < c.order[j]);
    }
}

// Inside calls, the calls' marks come first: a lane in a call made at mark 1000 (waiting at
// site 300 in the callee) goes before one at site 2000 outside it, and lanes at one site in
// calls made from different marks meet apart, the lower call first.
void context_body(void* p, uint32_t i) {
  auto* c = static_cast<SiteCtx*>(p);
  uint64_t* calls = c->g->simd_context() + size_t(i) * FiberGroup::kContextSlots;
  const uint32_t kind = i % 3;  // 0: outside, site 2000; 1: call at 1000; 2: call at 1500
  if (kind) calls[++calls[0]] = kind == 1 ? 1000 : 1500;
  c->token[i] = c->g->simd_meet(kind ? 300 : 2000);
  c->order[i] = c->n++;
  if (kind) --calls[0];
  c->g->simd_meet(FiberGroup::kLeaveSite);
}

void test_meet_inside_calls() {
  FiberGroup g(64 * 1024, 32);
  SiteCtx c{&g, {}, {}};
  g.run(64, context_body, &c);
  CHECK(g.forced_releases() == 0);
  for (uint32_t i = 0; i < 64; ++i)
    for (uint32_t j = 0; j < 64; ++j) {
      if (i / 32 != j / 32) continue;
      CHECK((c.token[i] == c.token[j]) == (i % 3 == j % 3));
      const uint32_t ri = (i % 3 + 2) % 3, rj = (j % 3 + 2) % 3;  // 1, then 2, then 0
      if (ri < rj) CHECK(c.order[i] < c.order[j]);
    }
  // Every call was left again.
  for (uint32_t i = 0; i < 64; ++i) CHECK(g.simd_context()[size_t(i) * FiberGroup::kContextSlots] == 0);
}

// -------------------------------------------------------------------- reuse

void test_reuse() {
  FiberGroup g(32 * 1024);
  uint32_t seed = 12345;
  uint32_t max_count = 0;
  for (int it = 0; it < 3000; ++it) {
    seed = seed * 1103515245u + 12345u;
    uint32_t n = 1 + (seed >> 8) % 1024;
    if (it % 100 == 0) n = 1024;
    max_count = n > max_count ? n : max_count;
    if (!reduce_once(g, n)) {
      CHECK(!"reduction after reuse");
      break;
    }
    if (it % 10 == 0) {
      SimdCtx c;
      c.g = &g;
      c.count = n;
      c.width = 1 + seed % 40;
      c.val.assign(n, ~0u);
      g.run(n, simd_body, &c, c.width);
      CHECK(c.bad == 0 && g.forced_releases() == 0);
    }
  }
  CHECK(g.stacks_mapped() <= max_count);
}

// ------------------------------------------------------- several OS threads

void test_threads() {
  constexpr int kThreads = 6;
  std::atomic<int> bad{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([t, &bad] {
      FiberGroup g(48 * 1024);
      for (int it = 0; it < 150; ++it) {
        uint32_t n = 64u << ((it + t) % 5);  // 64 .. 1024
        if (!reduce_once(g, n)) ++bad;
        if (FiberGroup::current() != nullptr) ++bad;
      }
    });
  for (auto& th : ts) th.join();
  CHECK(bad == 0);
}

// A fiber of one group may run another group to completion (the worker
// could do that for a nested dispatch); current() follows.
struct NestCtx {
  FiberGroup* outer;
  FiberGroup* inner;
  int bad = 0;
};

void nest_body(void* p, uint32_t i) {
  auto* c = static_cast<NestCtx*>(p);
  c->outer->barrier();
  if (!reduce_once(*c->inner, 128 + i)) ++c->bad;
  if (FiberGroup::current() != c->outer || c->outer->current_index() != i) ++c->bad;
  c->outer->barrier();
}

void test_nested_groups() {
  FiberGroup outer, inner(32 * 1024);
  NestCtx c{&outer, &inner};
  outer.run(8, nest_body, &c);
  CHECK(c.bad == 0);
  CHECK(FiberGroup::current() == nullptr);
}

// ---------------------------------------------------------- deep recursion

struct DeepCtx {
  FiberGroup* g;
  size_t target;  // bytes of stack to use below the body's frame
  std::vector<uint64_t> out;
};

__attribute__((noinline)) uint64_t recurse(uintptr_t top, size_t target, FiberGroup* g,
                                           uint32_t depth) {
  volatile char buf[512];
  buf[0] = char(depth);
  buf[511] = char(depth >> 8);
  uint64_t r;
  // The frame address, not &buf: ASan's fake stacks may put buf on the heap.
  if (top - reinterpret_cast<uintptr_t>(__builtin_frame_address(0)) < target)
    r = recurse(top, target, g, depth + 1);
  else {
    g->barrier();  // every fiber is deep at once: the switch must cope
    r = depth;
  }
  return r + uint8_t(buf[0]) + uint8_t(buf[511]);
}

void deep_body(void* p, uint32_t i) {
  auto* c = static_cast<DeepCtx*>(p);
  uintptr_t top = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  c->out[i] = recurse(top, c->target, c->g, 0);
  c->g->barrier();
}

void test_deep_recursion() {
  for (size_t bytes : {size_t(64 * 1024), size_t(256 * 1024)}) {
    FiberGroup g(bytes);
    DeepCtx c{&g, g.stack_bytes() - 6 * 1024, {}};  // all but ~6 KiB
    c.out.assign(64, 0);
    g.run(64, deep_body, &c);
    bool same = true;
    for (uint64_t v : c.out) same &= v == c.out[0] && v != 0;
    CHECK(same);
    CHECK(g.forced_releases() == 0);
  }
}

// Past the stack size the guard page must fault, in a child process.
__attribute__((noinline)) uint64_t recurse_forever(uint32_t depth) {
  volatile char buf[512];
  buf[0] = char(depth);
  if (depth > (1u << 30)) return 0;  // never: the guard page faults long before
  return recurse_forever(depth + 1) + uint8_t(buf[0]);
}

void overflow_body(void*, uint32_t) {
  volatile uint64_t r = recurse_forever(0);
  (void)r;
}

void test_guard_page() {
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    int devnull_fd = open("/dev/null", O_WRONLY);  // keep the child's report quiet
    if (devnull_fd >= 0) dup2(devnull_fd, 2);
    FiberGroup g(16 * 1024);
    g.run(4, overflow_body, nullptr);
    _exit(0);  // not reached if the guard works
  }
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  if (kAsan)  // ASan catches the SEGV itself and exits non-zero
    CHECK((WIFSIGNALED(status)) || (WIFEXITED(status) && WEXITSTATUS(status) != 0));
  else
    CHECK(WIFSIGNALED(status) && (WTERMSIG(status) == SIGSEGV || WTERMSIG(status) == SIGBUS));
}

// ------------------------------------------------- FP control: the thread's

// Switches do not save MXCSR (fiber.hpp): every fiber sees the control state of
// the thread that called run(), before and after barriers, and run() leaves it
// as it found it.
#if defined(__x86_64__)
uint32_t get_mxcsr() {
  uint32_t v;
  __asm__ __volatile__("stmxcsr %0" : "=m"(v));
  return v;
}
void set_mxcsr(uint32_t v) { __asm__ __volatile__("ldmxcsr %0" : : "m"(v)); }

struct FpCtx {
  FiberGroup* g;
  uint32_t expected;
  int bad = 0;
};

void fp_body(void* p, uint32_t) {
  auto* c = static_cast<FpCtx*>(p);
  if (get_mxcsr() != c->expected) ++c->bad;
  for (int r = 0; r < 3; ++r) {
    c->g->barrier();
    if (get_mxcsr() != c->expected) ++c->bad;
  }
}

void test_fp_control() {
  FiberGroup g;
  const uint32_t saved = get_mxcsr();
  for (uint32_t mode = 0; mode < 4; ++mode) {  // each rounding mode, flush to zero on
    const uint32_t state = (saved & ~0x6000u) | (mode << 13) | 0x8040u;
    set_mxcsr(state);
    FpCtx c{&g, state};
    g.run(64, fp_body, &c);
    const uint32_t after = get_mxcsr();
    set_mxcsr(saved);
    CHECK(c.bad == 0);
    CHECK(after == state);
  }
}
#endif

struct Test {
  const char* name;
  void (*fn)();
};

}  // namespace

int main(int argc, char** argv) {
  const Test tests[] = {
      {"reduction", test_reduction},
      {"prefix_scan", test_prefix_scan},
      {"identity", test_identity},
      {"invalid_arguments", test_invalid_arguments},
      {"early_return", test_early_return},
      {"last_returns", test_last_returns},
      {"simd_subsets", test_simd_subsets},
      {"simd_early_return", test_simd_early_return},
      {"divergence_released", test_divergence_released},
      {"meet_by_site", test_meet_by_site},
      {"meet_inside_calls", test_meet_inside_calls},
      {"reuse", test_reuse},
      {"guard_page", test_guard_page},
      {"threads", test_threads},
      {"nested_groups", test_nested_groups},
      {"deep_recursion", test_deep_recursion},
#if defined(__x86_64__)
      {"fp_control", test_fp_control},
#endif
  };
  int passed = 0, failed = 0;
  for (const Test& t : tests) {
    if (argc > 1 && std::strcmp(argv[1], t.name) != 0) continue;
    int before = g_check_failures;
    t.fn();
    bool ok = g_check_failures == before;
    std::printf("%-22s %s\n", t.name, ok ? "ok" : "FAILED");
    std::fflush(stdout);
    (ok ? passed : failed)++;
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
