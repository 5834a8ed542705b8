// Foreign producers let go of from wherever their last keep-alive is dropped (foreign_arguments.cpp's
// kept Buffers: a batch's or recording's calls, Recording.update()): with the GIL where it is held,
// from a pending call or a DeferReleases scope on the main thread, else by taking the GIL.
#include <mutex>
#include <vector>

#include "bindings.hpp"
#include "gil.hpp"

namespace metalcall::python {

namespace {

// Producers let go of without the GIL on the main thread wait for a pending call (which the main
// thread runs as soon as it is back in Python) to release them: a batch's Buffers are dropped where
// its work is found done, often inside a wait with the GIL released, and taking it back there once
// per object cost more than the object's reads. Other threads take the GIL (the main thread may be
// blocked for long, and the objects would wait with it).
unsigned long g_main_thread = 0;  // set under the GIL by the first keep_producer_alive
std::mutex g_release_mutex;
static auto& g_to_release = *new std::vector<PyObject*>;  // never destroyed (leaked at exit)
bool g_release_scheduled = false;

int release_pending(void*) {
  std::vector<PyObject*> objects;
  {
    std::lock_guard<std::mutex> lock(g_release_mutex);
    objects.swap(g_to_release);
    g_release_scheduled = false;
  }
  for (PyObject* o : objects) Py_DECREF(o);
  return 0;
}

// DeferReleases scopes open on this thread: it waits without the GIL and takes it back right after.
thread_local int t_deferring = 0;

// Has the interpreter run release_pending soon (on the main thread, at its next check).
void schedule_release() {
  {
    std::lock_guard<std::mutex> lock(g_release_mutex);
    if (g_release_scheduled || g_to_release.empty()) return;
    g_release_scheduled = true;
  }
  if (Py_AddPendingCall(release_pending, nullptr) == 0) return;
  // The interpreter's queue is full: take the GIL here instead (from any thread; not at exit).
  PyGILState_STATE state;
  if (!ensure_gil_unless_exiting(&state)) return;
  release_pending(nullptr);
  PyGILState_Release(state);
}

void let_go(PyObject* o) {
  if (!Py_IsInitialized()) return;  // the process is ending: leaked
  if (PyGILState_Check()) {
    Py_DECREF(o);
    return;
  }
  if (t_deferring) {  // this thread's wait: released when it has the GIL again (~DeferReleases)
    std::lock_guard<std::mutex> lock(g_release_mutex);
    g_to_release.push_back(o);
    return;
  }
  if (PyThread_get_thread_ident() != g_main_thread) {
    PyGILState_STATE state;  // from any thread (leaked at exit)
    if (!ensure_gil_unless_exiting(&state)) return;
    Py_DECREF(o);
    PyGILState_Release(state);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(g_release_mutex);
    g_to_release.push_back(o);
  }
  schedule_release();
}

}  // namespace

std::shared_ptr<void> keep_producer_alive(PyObject* x) {
  if (!g_main_thread) {
    g_main_thread = py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
  }
  Py_INCREF(x);
  return std::shared_ptr<void>(x, [](void* p) { let_go(static_cast<PyObject*>(p)); });
}

DeferReleases::DeferReleases() { ++t_deferring; }

DeferReleases::~DeferReleases() {
  if (--t_deferring > 0) return;
  if (!Py_IsInitialized()) return;  // the process is ending: leaked
  if (!PyGILState_Check()) {  // not back in Python yet: the interpreter releases them
    schedule_release();
    return;
  }
  std::vector<PyObject*> objects;
  {
    std::lock_guard<std::mutex> lock(g_release_mutex);
    if (g_to_release.empty()) return;
    objects.swap(g_to_release);  // a pending call already scheduled then finds none
  }
  for (PyObject* o : objects) Py_DECREF(o);
}

}  // namespace metalcall::python
