// Releasing the GIL around blocking C++ work, safely at interpreter exit: a
// daemon thread that comes back while Python finalizes is parked, not killed.
#pragma once

#include <Python.h>
#include <pybind11/pybind11.h>

#if defined(__GLIBCXX__)
#include <cxxabi.h>
#endif

namespace metalcall::python {

#if defined(__GLIBCXX__)
/** How glibc's pthread_exit unwinds a thread (CPython ends threads that want the GIL during
 *  finalization that way): a catch (...) must let it through (`catch (ForcedUnwind&) { throw; }`),
 *  or the process aborts ("FATAL: exception not rethrown"). */
using ForcedUnwind = abi::__forced_unwind;
#else
struct ForcedUnwind {};  // no such unwinding here: never thrown
#endif

/**
 * Lets go of the GIL for native work (PyEval_SaveThread), counted: exit() waits (a bounded
 * time) until no other thread is inside such work, because a thread still calling the CUDA
 * driver or NVRTC while exit() tears those libraries down crashes the process. Pair with
 * restore_gil.
 */
PyThreadState* release_gil();

/**
 * Takes the GIL back for `state` (release_gil's). While the interpreter
 * finalizes, CPython ends a thread that waits for the GIL with pthread_exit,
 * whose unwinding through a noexcept destructor or a catch(...) aborts the
 * process ("terminate called without an active exception"). So from the moment
 * Python's atexit callbacks run (before finalization begins), a daemon thread
 * coming back from C++ sleeps until the process exits instead (as CPython 3.14
 * itself does), and threads already waiting for the GIL get it first.
 */
void restore_gil(PyThreadState* state);

/**
 * Takes the GIL on any thread, such as a backend thread letting go of Python objects that
 * queued work kept (a batch's NumPy arrays, a DLPack producer); false once Python's atexit
 * callbacks have run on another thread: then the caller leaks the objects instead (the
 * process is ending). Taking the GIL during finalization would end the thread inside the
 * destructor that called this, which aborts the process. Release with PyGILState_Release.
 */
bool ensure_gil_unless_exiting(PyGILState_STATE* state);

/** Registers the atexit callback that starts parking threads (module init). */
void init_gil(pybind11::module_& m);

/** Like py::gil_scoped_release, with restore_gil. Declare it after the objects the work uses. */
class GilRelease {
 public:
  GilRelease() : state_(release_gil()) {}
  ~GilRelease() { restore_gil(state_); }
  GilRelease(const GilRelease&) = delete;
  GilRelease& operator=(const GilRelease&) = delete;

 private:
  PyThreadState* state_;
};

}  // namespace metalcall::python
