// Cost of FiberGroup barriers and runs (cpp/src/backends/cpu/fiber.*), with
// glibc's swapcontext round-robin as the peer measured side by side.
//
// Build and run (from the repository root; cpp/tests/fiber/run.sh builds it too):
//   S=cpp/src/backends/cpu
//   g++ -std=c++17 -O2 -pthread -I$S benchmarks/cpp/fiber_barrier.cpp $S/fiber.cpp
//       $S/fiber_switch_x86_64.S $S/fiber_switch_arm64.S -o /tmp/fiber_barrier
//   /tmp/fiber_barrier
#include "fiber.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

#if defined(__linux__)
#include <ucontext.h>
#endif

using metalcall::cpu::FiberGroup;
using Clock = std::chrono::steady_clock;

namespace {

struct Ctx {
  FiberGroup* g;
  uint32_t iters;
  volatile uint32_t sink;
};

void barrier_body(void* p, uint32_t i) {
  auto* c = static_cast<Ctx*>(p);
  for (uint32_t k = 0; k < c->iters; ++k) {
    c->sink = i;  // a store, as a kernel writing threadgroup memory would
    c->g->barrier();
  }
}

void shim_body(void* p, uint32_t i) {
  auto* c = static_cast<Ctx*>(p);
  for (uint32_t k = 0; k < c->iters; ++k) {
    c->sink = i;
    metalcall_fiber_barrier(c->g);
  }
}

void simd_body(void* p, uint32_t i) {
  auto* c = static_cast<Ctx*>(p);
  for (uint32_t k = 0; k < c->iters; ++k) {
    c->sink = i;
    c->g->simd_barrier();
  }
}

void empty_body(void*, uint32_t) {}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Best of `reps` timings of one run: ns per barrier per thread.
double per_barrier_ns(FiberGroup& g, FiberGroup::Body body, uint32_t count, uint32_t iters,
                      int reps = 5) {
  Ctx c{&g, iters, 0};
  g.run(count, body, &c);  // warm: maps stacks, faults pages in
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    g.run(count, body, &c);
    best = std::min(best, seconds_since(t0));
  }
  return best * 1e9 / (double(count) * iters);
}

// Best-of-batches ns per run() of `count` fibers.
double per_run_ns(FiberGroup& g, FiberGroup::Body body, uint32_t count, uint32_t iters) {
  Ctx c{&g, iters, 0};
  g.run(count, body, &c);
  double best = 1e30;
  for (int r = 0; r < 7; ++r) {
    const int runs = 2000;
    auto t0 = Clock::now();
    for (int k = 0; k < runs; ++k) g.run(count, body, &c);
    best = std::min(best, seconds_since(t0) / runs);
  }
  return best * 1e9;
}

#if defined(__linux__)
// The peer: the same round-robin barrier with swapcontext, each "barrier"
// being one switch to the next context (no bookkeeping at all).
struct Uctx {
  std::vector<ucontext_t> ctx;
  std::vector<std::vector<char>> stacks;
  ucontext_t main;
  uint32_t count, iters;
};
Uctx* g_u;

void uctx_body(int i) {
  Uctx& u = *g_u;
  uint32_t next = (uint32_t(i) + 1) % u.count;
  for (uint32_t k = 0; k < u.iters; ++k) swapcontext(&u.ctx[i], &u.ctx[next]);
  // Fibers finish in order 0..count-1; the last one goes home.
  if (uint32_t(i) == u.count - 1) setcontext(&u.main);
  setcontext(&u.ctx[next]);
}

double swapcontext_ns(uint32_t count, uint32_t iters) {
  Uctx u;
  u.count = count;
  u.iters = iters;
  u.ctx.resize(count);
  u.stacks.resize(count);
  g_u = &u;
  for (uint32_t i = 0; i < count; ++i) {
    u.stacks[i].resize(64 * 1024);
    getcontext(&u.ctx[i]);
    u.ctx[i].uc_stack.ss_sp = u.stacks[i].data();
    u.ctx[i].uc_stack.ss_size = u.stacks[i].size();
    u.ctx[i].uc_link = nullptr;
    makecontext(&u.ctx[i], reinterpret_cast<void (*)()>(uctx_body), 1, int(i));
  }
  auto t0 = Clock::now();
  swapcontext(&u.main, &u.ctx[0]);
  return seconds_since(t0) * 1e9 / (double(count) * iters);
}
#endif

}  // namespace

int main() {
  FiberGroup g;
  std::printf("FiberGroup barrier cost (best of 5; ns per barrier per thread)\n");
  struct Case { uint32_t count, iters; };
  for (Case cs : {Case{32, 10000}, Case{256, 10000}, Case{1024, 10000}}) {
    double ns = per_barrier_ns(g, barrier_body, cs.count, cs.iters);
    std::printf("  barrier       %4u fibers x %5u barriers: %6.2f ns\n", cs.count, cs.iters, ns);
  }
  std::printf("  C shim        %4u fibers x %5u barriers: %6.2f ns\n", 256, 10000,
              per_barrier_ns(g, shim_body, 256, 10000));
  std::printf("  simd_barrier  %4u fibers x %5u barriers: %6.2f ns\n", 256, 10000,
              per_barrier_ns(g, simd_body, 256, 10000));
  double fib256 = per_barrier_ns(g, barrier_body, 256, 10000);
#if defined(__linux__)
  double uc256 = swapcontext_ns(256, 2000);
  std::printf("  swapcontext   %4u contexts x %5u switches: %6.2f ns  (FiberGroup %.1fx faster)\n",
              256, 2000, uc256, uc256 / fib256);
#endif

  std::printf("FiberGroup::run cost (best of 7 batches of 2000 runs)\n");
  for (uint32_t n : {1u, 32u, 256u, 1024u}) {
    double ns = per_run_ns(g, empty_body, n, 0);
    std::printf("  empty body        %4u fibers: %8.0f ns per run (%5.2f ns per fiber)\n", n, ns,
                ns / n);
  }
  // One barrier forces every fiber onto its own stack: the cost of starting
  // and finishing real fibers rather than the loop that runs unblocked ones.
  double ns = per_run_ns(g, barrier_body, 1024, 1);
  std::printf("  one barrier each  %4u fibers: %8.0f ns per run (%5.2f ns per fiber)\n", 1024u,
              ns, ns / 1024);
  return 0;
}
