// reset_on_fork: one pthread_atfork registration for the CPU backend's objects.
#include "backends/cpu/fork_guard.hpp"

#include <pthread.h>

#include <mutex>
#include <new>
#include <utility>
#include <vector>

namespace metalcall::cpu {

namespace {

struct Registry {
  std::mutex mutex;  // held across fork() (prepare → parent/child), so the list is whole in the child
  std::vector<std::pair<void*, void (*)(void*)>> entries;
};

// Never destroyed: a fork may happen while exit() runs destructors.
Registry& registry() {
  static Registry* r = [] {
    auto* created = new Registry;
    pthread_atfork([] { registry().mutex.lock(); }, [] { registry().mutex.unlock(); },
                   [] {
                     // The child has one thread, this one: reset everything, then unlock.
                     Registry& reg = registry();
                     for (const auto& [object, reset] : reg.entries) reset(object);
                     reg.mutex.unlock();
                   });
    return created;
  }();
  return *r;
}

}  // namespace

void reset_on_fork(void* object, void (*reset)(void*)) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.entries.emplace_back(object, reset);
}

void forget_on_fork(void* object) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (std::size_t i = 0; i < r.entries.size(); ++i)
    if (r.entries[i].first == object) {
      r.entries.erase(r.entries.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
}

}  // namespace metalcall::cpu
