// Ctrl-C during waits: an InterruptScope whose check runs Python's signal handlers on the
// main thread (the only one that handles signals), and the re-raising of what they raised.
#include "bindings.hpp"

#include <pythread.h>

namespace metalcall::python {

namespace {

unsigned long g_main_thread = 0;
// What a signal handler raised during a wait, until the wait's error reaches Python.
// Only the main thread stores here.
PyObject* g_type = nullptr;
PyObject* g_value = nullptr;
PyObject* g_traceback = nullptr;

void drop_stash() {
  Py_CLEAR(g_type);
  Py_CLEAR(g_value);
  Py_CLEAR(g_traceback);
}

// Runs with or without the GIL held by this thread; takes it for the check only.
bool python_signal_check() {
  PyGILState_STATE gil = PyGILState_Ensure();
  bool raised = false;
  if (PyErr_CheckSignals() != 0) {
    raised = true;
    drop_stash();
    PyErr_Fetch(&g_type, &g_value, &g_traceback);
  }
  PyGILState_Release(gil);
  return raised;
}

}  // namespace

WaitScope::WaitScope() {
  if (PyThread_get_thread_ident() == g_main_thread) scope_.emplace(&python_signal_check);
}

void restore_interrupt() {
  if (g_type) {
    PyErr_Restore(g_type, g_value, g_traceback);  // steals the references
    g_type = g_value = g_traceback = nullptr;
  } else {
    PyErr_SetNone(PyExc_KeyboardInterrupt);
  }
}

void defer_interrupt() {
  const bool keyboard = !g_type || PyErr_GivenExceptionMatches(g_type, PyExc_KeyboardInterrupt);
  drop_stash();
  // As if Ctrl-C came again: the interpreter raises KeyboardInterrupt at its next check.
  if (keyboard) PyErr_SetInterrupt();
}

void init_interrupt(py::module_&) {
  g_main_thread = py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
}

}  // namespace metalcall::python
