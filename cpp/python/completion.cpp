// metalcall.Completion as a plain CPython type: every kernel call makes one, and
// a pybind11 instance costs several times more to create than the call itself
// on small grids.
#include <new>

#include "bindings.hpp"

namespace metalcall::python {

namespace {

struct CompletionObject {
  PyObject_HEAD
  Completion completion;
  // Foreign producers whose GPU memory the work uses in place (wrap_completion): held here, not
  // by a kept Buffer each (two allocations and a release from the thread that finds the work
  // done), until a wait finds the work done or the handle is dropped.
  std::vector<py::object> producers;
};

PyTypeObject* g_completion_type = nullptr;
// Completions that hold producers: the same object, seen by the cycle collector (tracking every
// Completion cost 35-40 ns of a 0.33 µs CPU call on the 2-core box).
PyTypeObject* g_holding_type = nullptr;

CompletionObject& object_of(PyObject* self) { return *reinterpret_cast<CompletionObject*>(self); }
Completion& of(PyObject* self) { return object_of(self).completion; }

// The producers are the only Python objects a Completion holds: a cycle through one of them
// (a tensor attribute holding the handle) is found through here, and broken by the producer's own
// tp_clear, whose dropped handle then waits for the work as any dropped handle does.
int completion_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));  // heap types own a reference from each instance
  for (const py::object& p : object_of(self).producers) Py_VISIT(p.ptr());
  return 0;
}

void completion_dealloc(PyObject* self) {
  if (PyType_IS_GC(Py_TYPE(self))) PyObject_GC_UnTrack(self);
  Completion& c = of(self);
  // Dropping the handle waits, like metalcompute's `del handle`; not once a wait on it was
  // interrupted (a handle dropped as KeyboardInterrupt propagates would wait for the GPU).
  if (!c.done() && c.submitted() && !c.interrupted()) {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);  // a dealloc may run while an exception propagates
    bool interrupted = false;
    {
      DeferReleases defer;      // the producers this wait finds done, released with the GIL back
      WaitScope interruptible;  // Ctrl-C cancels the work
      PyThreadState* state = release_gil();
      try {
        c.wait();
      } catch (const Interrupted&) {
        interrupted = true;
      } catch (...) {
        // Errors belong to whoever waits; a dropped handle has no one to tell.
      }
      restore_gil(state);  // parks a daemon thread that returns during interpreter exit
    }
    // No exception can leave a dealloc: KeyboardInterrupt comes at the interpreter's next check.
    if (interrupted) defer_interrupt();
    PyErr_Restore(type, value, traceback);
  }
  std::vector<py::object>& producers = object_of(self).producers;
  if (!producers.empty() && c.submitted() && !c.done()) {
    // An interrupted wait cancelled the work, which may still be stopping on the producers'
    // memory: they are let go of once it has (cancelled work ends at its next loop check).
    PyThreadState* state = release_gil();
    while (!c.done()) {
      try {
        c.wait();
      } catch (...) {
        // the work's error (interrupted) belongs to the wait that was interrupted
      }
    }
    restore_gil(state);
  }
  producers.~vector();
  c.~Completion();
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);  // heap types own a reference from each instance
}

// wait(timeout=None, cancel=True): True once the work has finished (raising its error, if
// any); False if `timeout` seconds passed first, and then (cancel=True) the work is stopped.
// Ctrl-C raises KeyboardInterrupt and cancels the work.
PyObject* completion_wait(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* kKeywords[] = {"timeout", "cancel", nullptr};
  PyObject* timeout = Py_None;
  PyObject* cancel = Py_True;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O$O:wait", const_cast<char**>(kKeywords), &timeout, &cancel))
    return nullptr;
  try {
    if (!PyBool_Check(cancel)) {
      throw ArgumentError(std::string("Completion.wait(cancel=...) takes True or False, not ") + Py_TYPE(cancel)->tp_name);
    }
    double seconds = -1;
    if (timeout != Py_None) {
      if (PyBool_Check(timeout) || !PyNumber_Check(timeout)) {
        throw ArgumentError("Completion.wait(timeout=...) takes seconds (an int or float) or None, not " +
                            std::string(Py_TYPE(timeout)->tp_name));
      }
      seconds = PyFloat_AsDouble(timeout);
      if (seconds == -1 && PyErr_Occurred()) throw py::error_already_set();
      if (!(seconds >= 0)) throw ArgumentError("Completion.wait(timeout=...) cannot be negative or NaN, got " + std::string(py::str(timeout)));
    }
    Completion c = of(self);
    bool finished = true;
    {
      DeferReleases defer;  // the producers this wait finds done, released with the GIL back
      WaitScope interruptible;
      GilRelease release;
      if (seconds >= 0) {
        finished = cancel == Py_True ? c.wait_for_or_cancel(seconds, "Completion.wait(timeout=...) ran out")
                                     : c.wait_for(seconds);
      }
      if (finished) c.wait();  // its error, if any
    }
    if (!finished) Py_RETURN_FALSE;
    object_of(self).producers.clear();  // the work is done with their memory
  } catch (py::error_already_set& e) {
    e.restore();
    return nullptr;
  } catch (ForcedUnwind&) {
    throw;  // a thread CPython ends (pthread_exit) must unwind, or the process aborts
  } catch (...) {
    py::detail::try_translate_exceptions();
    return nullptr;
  }
  Py_RETURN_TRUE;
}

PyObject* completion_cancel(PyObject* self, PyObject*) {
  of(self).cancel("Completion.cancel() was called");
  Py_RETURN_NONE;
}

PyObject* completion_enter(PyObject* self, PyObject*) {
  Py_INCREF(self);
  return self;
}

PyObject* completion_exit(PyObject* self, PyObject*) {
  PyObject* empty = PyTuple_New(0);
  if (!empty) return nullptr;
  PyObject* r = completion_wait(self, empty, nullptr);
  Py_DECREF(empty);
  if (!r) return nullptr;
  Py_DECREF(r);
  Py_RETURN_FALSE;
}

PyObject* completion_done(PyObject* self, void*) { return PyBool_FromLong(of(self).done()); }

PyObject* completion_gpu_time(PyObject* self, void*) { return PyFloat_FromDouble(of(self).gpu_time()); }

// Completions come only from kernel calls and batches.
PyObject* completion_new(PyTypeObject*, PyObject*, PyObject*) {
  PyErr_SetString(PyExc_TypeError, "metalcall.Completion cannot be created directly; kernel calls return one");
  return nullptr;
}

PyObject* completion_repr(PyObject* self) {
  const Completion& c = of(self);
  const char* state = c.done() ? "done" : c.submitted() ? "pending" : "recorded in a batch";
  return PyUnicode_FromFormat("<metalcall.Completion %s>", state);
}

PyMethodDef kMethods[] = {
    {"wait", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(completion_wait)), METH_VARARGS | METH_KEYWORDS,
     "wait(timeout=None, *, cancel=True) -> bool. Blocks until the work has finished and returns True (raising "
     "ExecutionError if it failed); with a timeout in seconds, returns False if the work has not finished by then, "
     "and stops it unless cancel=False (a later wait() raises ExecutionError saying it timed out). Ctrl-C raises "
     "KeyboardInterrupt and stops the work (running kernels at their next loop iteration)."},
    {"cancel", completion_cancel, METH_NOARGS,
     "cancel(). Stops the work: queued work is skipped, running kernels stop at their next loop iteration; a later "
     "wait() raises ExecutionError. No-op once the work is done."},
    {"__enter__", completion_enter, METH_NOARGS, nullptr},
    {"__exit__", completion_exit, METH_VARARGS, "Waits for the work."},
    {nullptr, nullptr, 0, nullptr},
};

PyGetSetDef kGetSet[] = {
    {"done", completion_done, nullptr, "True once the work has finished. Never blocks.", nullptr},
    {"gpu_time", completion_gpu_time, nullptr, "Seconds the device spent on the work (0 until done; NaN when the backend did not time it: a CUDA call "
     "on a device opened without timing=True).",
     nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyType_Slot kSlots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(completion_dealloc)},
    {Py_tp_repr, reinterpret_cast<void*>(completion_repr)},
    {Py_tp_new, reinterpret_cast<void*>(completion_new)},
    {Py_tp_methods, kMethods},
    {Py_tp_getset, kGetSet},
    {Py_tp_doc, const_cast<char*>("Handle on a kernel call. Dropping it waits for the work (like metalcompute's "
                                  "`del handle`); keep it to overlap work, then wait().")},
    {0, nullptr},
};

PyType_Spec kSpec = {"metalcall.Completion", sizeof(CompletionObject), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, kSlots};

PyType_Slot kHoldingSlots[] = {
    {Py_tp_traverse, reinterpret_cast<void*>(completion_traverse)},
    {Py_tp_free, reinterpret_cast<void*>(PyObject_GC_Del)},
    {0, nullptr},
};

PyType_Spec kHoldingSpec = {"metalcall.Completion", sizeof(CompletionObject), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
                            kHoldingSlots};

}  // namespace

py::object wrap_completion(Completion completion, std::vector<py::object> producers) {
  // Tracked by the collector from the allocation on: its fields are zeros (an empty vector) until set.
  PyObject* self = PyType_GenericAlloc(producers.empty() ? g_completion_type : g_holding_type, 0);
  if (!self) throw py::error_already_set();
  new (&of(self)) Completion(std::move(completion));
  new (&object_of(self).producers) std::vector<py::object>(std::move(producers));
  return py::reinterpret_steal<py::object>(self);
}

void init_completion(py::module_& m) {
  PyObject* type = PyType_FromSpec(&kSpec);
  if (!type) throw py::error_already_set();
  g_completion_type = reinterpret_cast<PyTypeObject*>(type);
  PyObject* holding = PyType_FromSpecWithBases(&kHoldingSpec, type);
  if (!holding) throw py::error_already_set();
  g_holding_type = reinterpret_cast<PyTypeObject*>(holding);  // kept for the process
  m.add_object("Completion", py::handle(type));
}

}  // namespace metalcall::python
