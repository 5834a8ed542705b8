// Stress test of the CPU backend's WorkerPool, standalone (run.sh builds it plain,
// with ThreadSanitizer and with AddressSanitizer): every item of every job runs
// exactly once, back to back (workers spinning), after pauses (workers asleep) and
// from several calling threads at once.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "backends/cpu/worker_pool.hpp"

using metalcall::cpu::WorkerPool;

namespace {

struct Count {
  std::vector<std::atomic<int>> hits;
  explicit Count(std::size_t n) : hits(n) {}
};

bool mark(void* ctx, std::uint64_t begin, std::uint64_t end, unsigned worker) {
  auto* c = static_cast<Count*>(ctx);
  if (worker >= WorkerPool::instance().size()) std::abort();
  for (std::uint64_t i = begin; i < end; ++i) c->hits[i].fetch_add(1, std::memory_order_relaxed);
  return true;
}

// A job whose chunks say stop after `stop_after` chunks ran: the rest are never taken.
struct Stopping {
  std::atomic<std::uint64_t> chunks{0};
  std::uint64_t stop_after;
};

bool stop_early(void* ctx, std::uint64_t, std::uint64_t, unsigned) {
  auto* s = static_cast<Stopping*>(ctx);
  return s->chunks.fetch_add(1) + 1 < s->stop_after;
}

int failures = 0;

void run_job(std::uint64_t n, std::uint64_t chunk, const char* what) {
  Count c(n);
  WorkerPool::instance().parallel_for(n, chunk, mark, &c);
  for (std::uint64_t i = 0; i < n; ++i) {
    if (c.hits[i].load() != 1) {
      std::printf("FAIL %s: n=%llu chunk=%llu item %llu ran %d times\n", what, (unsigned long long)n,
                  (unsigned long long)chunk, (unsigned long long)i, c.hits[i].load());
      ++failures;
      return;
    }
  }
}

}  // namespace

int main() {
  std::printf("pool of %u workers\n", WorkerPool::instance().size());
  for (int k = 0; k < 2000; ++k) run_job(1 + k % 300, 1 + k % 7, "back to back");
  for (int k = 0; k < 20; ++k) {
    std::this_thread::sleep_for(std::chrono::microseconds(300));  // past the spin: workers sleep
    run_job(1000, 3, "after a pause");
  }
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([t] {
      for (int k = 0; k < 300; ++k) run_job(100 + (k * 7 + t) % 500, 1 + (k + t) % 5, "several callers");
    });
  }
  for (auto& c : callers) c.join();
  // 2^30 chunks, stopped after 10: each worker takes at most one more chunk than it had running.
  Stopping stopping;
  stopping.stop_after = 10;
  WorkerPool::instance().parallel_for(std::uint64_t(1) << 30, 1, stop_early, &stopping);
  if (stopping.chunks.load() > 10 + WorkerPool::instance().size()) {
    std::printf("FAIL stopped job: %llu chunks ran after the 10th said stop\n", (unsigned long long)stopping.chunks.load());
    ++failures;
  }
  run_job(0, 1, "empty");
  run_job(1, 1, "one item");
  std::printf(failures ? "worker pool: FAILED\n" : "worker pool: all jobs exact\n");
  return failures ? 1 : 0;
}
