// restore_gil and the atexit callback behind it: see gil.hpp.
#include "gil.hpp"

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <new>
#include <thread>

#include "metalcall/device.hpp"
#include "metalcall/interrupt.hpp"

namespace metalcall::python {

namespace {

// Never destroyed: daemon threads may use them while exit() runs destructors.
// `exiting` and `restoring` pair up like Dekker's flags (both seq_cst): a thread
// that counts itself in and then reads `exiting` false is seen by the atexit
// callback, which sets `exiting` and then waits for the count to drop.
struct ExitState {
  std::mutex mutex;  // only for the atexit callback's wait
  std::condition_variable cv;
  std::atomic<bool> exiting{false};             // Python's atexit callbacks have started
  std::atomic<std::thread::id> exit_thread{};   // the thread that runs them (and finalization)
  std::atomic<unsigned> restoring{0};           // threads inside restore_gil
  std::atomic<unsigned> native{0};              // threads between release_gil and restore_gil
};

// How long exit() waits for native work on other threads (a compile, a wait the
// stop has not reached yet) before it goes on regardless.
constexpr auto kNativeWorkGrace = std::chrono::seconds(10);
ExitState& exit_state() {
  static ExitState* s = [] {
    auto* created = new ExitState;
    // A thread of the parent may hold the lock at fork(): the child starts afresh.
    pthread_atfork(nullptr, nullptr, [] {
      ExitState& child = exit_state();
      new (&child.mutex) std::mutex;
      new (&child.cv) std::condition_variable;
      child.restoring.store(0);
      child.native.store(0);
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

// Wakes the atexit callback, which may be waiting for a count to drop.
void notify_exit(ExitState& s) {
  if (s.exiting.load()) {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.cv.notify_all();
  }
}

// Leaves restore_gil.
void count_out(ExitState& s) {
  if (s.restoring.fetch_sub(1) == 1) notify_exit(s);
}

bool exiting_elsewhere(const ExitState& s) {
  return s.exiting.load() && std::this_thread::get_id() != s.exit_thread.load();
}

// Run at the end of Py_FinalizeEx (a Py_AtExit callback), before exit() runs any C atexit
// handler or library destructor: threads still in native work (a compile, the end of a stopped
// wait) finish it first, then park in restore_gil. Library destructors cannot be ordered after
// a std::atexit handler: exit() runs them last-in first-out, and a library whose C++ statics
// are first set up after that handler was registered (NVRTC's, by a compile that began after
// the atexit callbacks: the process's first, with a warm cache) tears itself down before it,
// under the compiling thread (segfaults in nvrtcCompileProgram, H200, 2026-12-03). No thread
// can start native work now: that needs the GIL, which daemon threads no longer get.
void wait_for_native_work() {
  ExitState& s = exit_state();
  std::unique_lock<std::mutex> lock(s.mutex);
  s.cv.wait_for(lock, kNativeWorkGrace, [&] { return s.native.load() == 0; });
}

// The atexit callback: no thread may start waiting for the GIL from now on, and
// those already waiting get it (this thread lets go of it) before finalization.
void on_exit() {
  // Work still queued or running (a kernel that never ends, a call on a daemon thread) is
  // stopped, so that nothing the interpreter waits for during finalization (a dropped
  // Completion, a Buffer's last use) can keep the process alive.
  Device::stop_all_work("the interpreter is exiting");
  ExitState& s = exit_state();
  s.exit_thread.store(std::this_thread::get_id());
  s.exiting.store(true);
  // Also from exit() itself, for an exit that never finishes finalization (a second wait
  // returns at once): registered now, after the libraries loaded so far, it runs before theirs.
  std::atexit(wait_for_native_work);
  PyThreadState* self = PyEval_SaveThread();
  {
    std::unique_lock<std::mutex> lock(s.mutex);
    s.cv.wait(lock, [&] { return s.restoring.load() == 0; });
  }
  PyEval_RestoreThread(self);
}

// The BlockingWaitHook (metalcall/interrupt.hpp): a wait for another thread's lock lets go of
// the GIL if this thread holds it, since the lock's holder may need the GIL to get on.
void wait_without_gil(void (*wait)(void*), void* arg) {
  if (!Py_IsInitialized() || !PyGILState_Check()) {
    wait(arg);
    return;
  }
  GilRelease release;
  wait(arg);
}

}  // namespace

PyThreadState* release_gil() {
  exit_state().native.fetch_add(1);
  return PyEval_SaveThread();
}

void restore_gil(PyThreadState* state) {
  ExitState& s = exit_state();
  s.restoring.fetch_add(1);
  if (s.native.fetch_sub(1) == 1) notify_exit(s);
  if (exiting_elsewhere(s)) {
    count_out(s);
    park();
  }
  PyEval_RestoreThread(state);
  count_out(s);
}

bool ensure_gil_unless_exiting(PyGILState_STATE* state) {
  ExitState& s = exit_state();
  s.restoring.fetch_add(1);  // counted like restore_gil: the atexit callback lets this thread in first
  if (exiting_elsewhere(s)) {
    count_out(s);
    return false;
  }
  *state = PyGILState_Ensure();
  count_out(s);
  return true;
}

void init_gil(pybind11::module_& m) {
  exit_state();  // registers its fork handler now, before any thread can fork
  set_blocking_wait_hook(&wait_without_gil);
  // Registered at import: atexit runs callbacks last-in first-out, so this one runs
  // after those of modules imported later, which may still call metalcall.
  pybind11::module_::import("atexit").attr("register")(pybind11::cpp_function(&on_exit));
  if (Py_AtExit(&wait_for_native_work) != 0) {
    // CPython's table of 32 is full: exit() still waits (on_exit's std::atexit), later.
    PyErr_WarnEx(PyExc_RuntimeWarning, "metalcall: no room for a Py_AtExit callback", 1);
  }
  (void)m;
}

}  // namespace metalcall::python
