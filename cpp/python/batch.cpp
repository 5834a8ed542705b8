// metalcall.Batch: `with dev.batch():` over the core's per-thread Batch. Calls
// find the open batch through Device::current_batch(); nothing is tracked here.
#include "bindings.hpp"

namespace metalcall::python {

namespace {

// Left open, a batch or recording would go on recording this thread's calls.
void discard_if_open(Batch& batch) noexcept {
  if (!batch) return;
  try {
    batch.discard();
  } catch (...) {
    // Nothing to tell from a destructor; discard() only drops work.
  }
}

}  // namespace

PyBatch::~PyBatch() { discard_if_open(batch); }

PyRecording::~PyRecording() { discard_if_open(recording); }

void init_batch(py::module_& m) {
  py::class_<PyBatch>(m, "Batch", R"doc(
Records every kernel call made inside ``with dev.batch():`` into one submission,
committed when the block ends (discarded if it raises).
)doc")
      .def("__enter__", [](PyBatch& b) -> PyBatch& {
        if (b.entered) throw ArgumentError("a batch can be entered once; make a new one with dev.batch()");
        b.batch = b.device.begin_batch();
        b.entered = true;
        return b;
      }, py::return_value_policy::reference)
      .def("__exit__", [](PyBatch& b, const py::object& exc_type, const py::object&, const py::object&) {
        if (!b.entered || b.exited) return false;
        b.exited = true;
        Batch batch = std::move(b.batch);
        if (!exc_type.is_none()) {
          batch.discard();
          return false;
        }
        {
          WaitScope interruptible;  // Ctrl-C while the commit waits for borrowed arrays
          GilRelease release;
          b.completion = batch.commit();
        }
        // Dropping the last handle releases the arrays the calls borrowed (commit waited for them).
        return false;
      })
      .def("wait", [](PyBatch& b) {
        WaitScope interruptible;  // Ctrl-C
        GilRelease release;
        b.completion.wait();
      }, "Waits for the committed work.")
      .def_property_readonly("completion", [](const PyBatch& b) { return wrap_completion(b.completion); },
                             "The Completion of the committed work.")
      .def_property_readonly("done", [](const PyBatch& b) { return b.exited && b.completion.done(); })
      .def_property_readonly("gpu_time", [](const PyBatch& b) { return b.completion.gpu_time(); })
      .def("__len__", [](const PyBatch& b) { return b.batch ? b.batch.size() : 0; });

  py::class_<PyRecording>(m, "Graph", R"doc(
Kernel calls recorded once with ``with dev.record() as g:`` (they do not run while
recording) and replayed with ``g.replay()``, each replay one submission. The graph
keeps the Buffers and arrays its calls use alive; a replay reads and writes them
again, as the calls would.
)doc")
      .def("__enter__", [](PyRecording& r) -> PyRecording& {
        if (r.entered) throw ArgumentError("a recording can be entered once; make a new one with dev.record()");
        r.recording = r.device.begin_recording();
        r.entered = true;
        return r;
      }, py::return_value_policy::reference)
      .def("__exit__", [](PyRecording& r, const py::object& exc_type, const py::object&, const py::object&) {
        if (!r.entered || r.exited) return false;
        r.exited = true;
        Batch recording = std::move(r.recording);
        if (!exc_type.is_none()) {
          recording.discard();
          return false;
        }
        r.graph = recording.end_recording();
        return false;
      })
      .def("replay", [](PyRecording& r) {
        if (!r.graph) {
          throw ArgumentError(r.entered && !r.exited ? "leave the `with dev.record()` block before replaying it"
                                                     : "this recording holds no graph (never entered, or it raised)");
        }
        Completion completion;
        {
          WaitScope interruptible;  // Ctrl-C while a replay waits for borrowed arrays
          GilRelease release;
          completion = r.graph.replay();
        }
        return wrap_completion(std::move(completion));
      }, "Runs the recorded calls again as one submission; returns a Completion (dropping it waits).")
      .def("update", [](PyRecording& r, const py::args& args) {
        if (!r.graph) throw ArgumentError("update() needs a finished recording: leave the `with dev.record()` block first");
        if (args.size() == 0) throw ArgumentError("update(index, *arguments): give the recorded call's index first");
        const long long index = index_value(args[0]);
        if (index < 0) throw ArgumentError("update(): the call index must be >= 0, not " + std::to_string(index));
        std::vector<Argument> arguments;
        HostReferences refs;
        convert_arguments(PositionalArgs::of(args), 1, &r.device, arguments, refs);
        std::shared_ptr<void> owner = keep_host_arguments(PositionalArgs::of(args), 1, refs);
        r.graph.update(static_cast<std::size_t>(index), arguments, std::move(owner));
      }, "update(index, *arguments): re-binds the arguments of recorded call `index` (grid and "
         "threadgroup stay); later replays use them.")
      .def("__len__", [](const PyRecording& r) {
        return r.graph ? r.graph.size() : r.recording ? r.recording.size() : 0;
      });
}

}  // namespace metalcall::python
