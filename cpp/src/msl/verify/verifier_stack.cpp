// Runs the verifier on a thread with a large stack (see verifier_stack.hpp).
#include "msl/verify/verifier_stack.hpp"

#include <exception>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

namespace metalcall::msl::verify {

namespace {

struct Job {
  const std::function<void()>* work;
  std::exception_ptr error;
};

void* run_job(void* data) {
  auto* job = static_cast<Job*>(data);
  try {
    (*job->work)();
  } catch (...) {
    job->error = std::current_exception();
  }
  return nullptr;
}

}  // namespace

void run_on_verifier_stack(const std::function<void()>& work) {
  // Our own mapping: MAP_NORESERVE keeps 4 GiB of address space from counting as memory, and a
  // guard page below it turns an overflow into a fault at its end, never a write past it.
  const std::size_t guard = std::size_t(sysconf(_SC_PAGESIZE));
  const std::size_t size = kVerifierStackBytes + guard;
  void* map = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1,
                   0);
  if (map == MAP_FAILED) return work();
  mprotect(map, guard, PROT_NONE);
  Job job{&work, nullptr};
  pthread_attr_t attr;
  pthread_t thread;
  bool started = false;
  if (pthread_attr_init(&attr) == 0) {
    started = pthread_attr_setstack(&attr, static_cast<char*>(map) + guard, kVerifierStackBytes) == 0 &&
              pthread_create(&thread, &attr, &run_job, &job) == 0;
    pthread_attr_destroy(&attr);
  }
  if (started) pthread_join(thread, nullptr);
  munmap(map, size);
  if (!started) return work();
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace metalcall::msl::verify
