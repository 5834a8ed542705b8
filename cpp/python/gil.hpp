// Releasing the GIL around blocking C++ work, safely at interpreter exit: a
// daemon thread that comes back while Python finalizes is parked, not killed.
#pragma once

#include <Python.h>
#include <pybind11/pybind11.h>

namespace metalcall::python {

/**
 * Takes the GIL back for `state` (PyEval_SaveThread's). While the interpreter
 * finalizes, CPython ends a thread that waits for the GIL with pthread_exit,
 * whose unwinding through a noexcept destructor or a catch(...) aborts the
 * process ("terminate called without an active exception"). So from the moment
 * Python's atexit callbacks run (before finalization begins), a daemon thread
 * coming back from C++ sleeps until the process exits instead (as CPython 3.14
 * itself does), and threads already waiting for the GIL get it first.
 */
void restore_gil(PyThreadState* state);

/** Registers the atexit callback that starts parking threads (module init). */
void init_gil(pybind11::module_& m);

/** Like py::gil_scoped_release, with restore_gil. Declare it after the objects the work uses. */
class GilRelease {
 public:
  GilRelease() : state_(PyEval_SaveThread()) {}
  ~GilRelease() { restore_gil(state_); }
  GilRelease(const GilRelease&) = delete;
  GilRelease& operator=(const GilRelease&) = delete;

 private:
  PyThreadState* state_;
};

}  // namespace metalcall::python
