// restore_gil and the atexit callback behind it: see gil.hpp.
#include "gil.hpp"

#include <pthread.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <new>
#include <thread>

namespace metalcall::python {

namespace {

// Never destroyed: daemon threads may use them while exit() runs destructors.
struct ExitState {
  std::mutex mutex;
  std::condition_variable cv;
  bool exiting = false;       // Python's atexit callbacks have started
  std::thread::id exit_thread;  // the thread that runs them (and finalization)
  unsigned restoring = 0;     // threads inside PyEval_RestoreThread
};
ExitState& exit_state() {
  static ExitState* s = [] {
    auto* created = new ExitState;
    // A thread of the parent may hold the lock at fork(): the child starts afresh.
    pthread_atfork(nullptr, nullptr, [] {
      ExitState& child = exit_state();
      new (&child.mutex) std::mutex;
      new (&child.cv) std::condition_variable;
      child.restoring = 0;
    });
    return created;
  }();
  return *s;
}

[[noreturn]] void park() {
  // Finalization ends only in exit(): this thread has nothing left to do. The work
  // it released the GIL for is over, so it holds no lock of ours.
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

// The atexit callback: no thread may start waiting for the GIL from now on, and
// those already waiting get it (this thread lets go of it) before finalization.
void on_exit() {
  ExitState& s = exit_state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.exiting = true;
    s.exit_thread = std::this_thread::get_id();
  }
  PyThreadState* self = PyEval_SaveThread();
  {
    std::unique_lock<std::mutex> lock(s.mutex);
    s.cv.wait(lock, [&] { return s.restoring == 0; });
  }
  PyEval_RestoreThread(self);
}

}  // namespace

void restore_gil(PyThreadState* state) {
  ExitState& s = exit_state();
  {
    std::unique_lock<std::mutex> lock(s.mutex);
    if (s.exiting && std::this_thread::get_id() != s.exit_thread) {
      lock.unlock();
      park();
    }
    ++s.restoring;
  }
  PyEval_RestoreThread(state);
  std::lock_guard<std::mutex> lock(s.mutex);
  if (--s.restoring == 0) s.cv.notify_all();
}

void init_gil(pybind11::module_& m) {
  exit_state();  // registers its fork handler now, before any thread can fork
  // Registered at import: atexit runs callbacks last-in first-out, so this one runs
  // after those of modules imported later, which may still call metalcall.
  pybind11::module_::import("atexit").attr("register")(pybind11::cpp_function(&on_exit));
  (void)m;
}

}  // namespace metalcall::python
