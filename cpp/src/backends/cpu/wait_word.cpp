#include "backends/cpu/wait_word.hpp"

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#else
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <new>

#include "backends/cpu/fork_guard.hpp"
#endif

namespace metalcall::cpu {

#if defined(__linux__)

static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t), "a futex is a plain 32-bit word");

void wait_word(std::atomic<std::uint32_t>& word, std::uint32_t expected, long timeout_us) {
  timespec limit{timeout_us / 1'000'000, (timeout_us % 1'000'000) * 1000};
  // The kernel compares the word with `expected` before it sleeps: a change (and its wake) just
  // before the call is never lost.
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected,
          timeout_us > 0 ? &limit : nullptr, nullptr, 0);
}

void wake_word(std::atomic<std::uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE_PRIVATE, 0x7fffffff, nullptr, nullptr, 0);
}

#else

namespace {

struct Bucket {
  std::mutex mutex;
  std::condition_variable cv;
};
constexpr std::size_t kBuckets = 64;
// Never destroyed (threads may wait during exit); in a forked child the locks start afresh.
Bucket* g_buckets = new Bucket[kBuckets];
[[maybe_unused]] const bool g_buckets_reset = (reset_on_fork(&g_buckets,
                                            [](void*) {
                                              for (std::size_t i = 0; i < kBuckets; ++i) {
                                                new (&g_buckets[i].mutex) std::mutex;
                                                new (&g_buckets[i].cv) std::condition_variable;
                                              }
                                            }),
                              true);

Bucket& bucket_of(const void* word) { return g_buckets[(reinterpret_cast<std::uintptr_t>(word) / 64) % kBuckets]; }

}  // namespace

void wait_word(std::atomic<std::uint32_t>& word, std::uint32_t expected, long timeout_us) {
  Bucket& b = bucket_of(&word);
  std::unique_lock<std::mutex> lock(b.mutex);
  // A waker changes the word, then takes this lock to notify: a change before the check is seen here.
  if (word.load(std::memory_order_seq_cst) != expected) return;
  if (timeout_us > 0) {
    b.cv.wait_for(lock, std::chrono::microseconds(timeout_us));
  } else {
    b.cv.wait(lock);
  }
}

void wake_word(std::atomic<std::uint32_t>& word) {
  Bucket& b = bucket_of(&word);
  { std::lock_guard<std::mutex> lock(b.mutex); }
  b.cv.notify_all();
}

#endif

}  // namespace metalcall::cpu
