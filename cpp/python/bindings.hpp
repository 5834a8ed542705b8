// Shared declarations of the pybind11 bindings: one init_<area>() per file.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gil.hpp"
#include "metalcall/metalcall.hpp"

namespace py = pybind11;

namespace metalcall::python {

void init_errors(py::module_& m);
void init_completion(py::module_& m);
void init_buffer(py::module_& m);
void init_batch(py::module_& m);
void init_device(py::module_& m);
void init_library(py::module_& m);
void init_kernel(py::module_& m);
void init_cache(py::module_& m);
void init_interrupt(py::module_& m);
void init_verify(py::module_& m);  // the translation verifier (translation_check.hpp)
void init_fusion(py::module_& m);  // metalcall.numpy's fused kernels: walk and launch (fusion.cpp)
void init_lazy_nodes(py::module_& m);  // metalcall.numpy's elementwise operations' nodes (lazy_nodes.cpp)
/** compile()'s defines=, fast_math= and language_version= as CompileOptions (device.cpp); ArgumentError when malformed. */
CompileOptions compile_options(const py::object& defines, const py::object& fast_math, const py::object& language_version);
void init_texture(py::module_& m);  // after init_device: it adds Device.texture/texture_from/sampler
/** The NumPy dtype of one channel of a texel of `texture` (what np.asarray(texture) holds). */
py::dtype texel_dtype(const Texture& texture);
/** The textures= and samplers= keywords of a call; false for other names. */
bool parse_texture_option(const std::string& name, const py::handle& value, LaunchShape& shape);

/** What a kernel call checks of an array's or Buffer's elements, from its dtype. */
struct ElementFacts {
  ScalarType scalar = ScalarType::unknown;  // the MSL scalar, if the dtype is one
  bool raw_bytes = false;                   // uint8: untyped bytes
  bool big_endian = false;                  // non-native byte order (itself or a field)
  std::string foreign_type;                 // the dtype's name when MSL has no scalar for it, else empty
};

/** The ElementFacts of `dtype` (arguments.cpp). */
ElementFacts element_facts(const py::dtype& dtype);

/** A Buffer as Python sees it: memory plus the dtype and shape of its views. */
struct PyBuffer {
  Buffer buffer;
  Device device;
  py::dtype dtype;
  std::vector<py::ssize_t> shape;
  std::string format;  // PEP 3118 format of dtype
  py::ssize_t itemsize;
  ElementFacts elements;  // of dtype, found once: a kernel call reads them for every Buffer it is given
};

/**
 * The C++ value of `o` when its type is exactly `type` (a pybind11 class of one
 * base); nullptr otherwise, and the caller takes pybind11's general cast. The call
 * path uses it: pybind11's cast looks the type up in a hash table on every call.
 */
template <class T>
T* exact_instance(PyObject* o, PyTypeObject* type) {
  if (Py_TYPE(o) != type) return nullptr;
  auto* inst = reinterpret_cast<py::detail::instance*>(o);
  if (!inst->simple_layout || !inst->simple_holder_constructed) return nullptr;
  return static_cast<T*>(inst->simple_value_holder[0]);
}

/** metalcall.Buffer's type object (set by init_buffer). */
extern PyTypeObject* g_buffer_type;

/** Makes a PyBuffer of `shape` × `dtype` on `device` (zero-filled). */
/** A new Buffer; `zeroed` false: contents undefined (the caller overwrites every byte). */
PyBuffer make_buffer(const Device& device, const std::vector<py::ssize_t>& shape, const py::dtype& dtype,
                     bool zeroed = true);

/** A PyBuffer over `buffer` (already sized for `shape` × `dtype`). */
PyBuffer describe_buffer(const Device& device, Buffer buffer, const std::vector<py::ssize_t>& shape, const py::dtype& dtype);

/** Adds __dlpack__, __dlpack_device__, __cuda_array_interface__ to Buffer and from_dlpack to `m`. */
void init_dlpack(py::module_& m);

/** True for an object DLPack can import that the buffer protocol cannot (torch, JAX, …). */
bool dlpack_only(const py::handle& x);

/**
 * Imports a DLPack producer as a Buffer on `device` without a copy (mc.from_dlpack):
 * host memory on the CPU, CUDA memory of that GPU on CUDA (ordered after the
 * producer's stream); ArgumentError for any other pairing.
 */
PyBuffer import_dlpack(const py::handle& x, const Device& device);

/** True when a DLPack producer reports CUDA memory (kDLCUDA, kDLCUDAManaged). */
bool dlpack_on_gpu(const py::handle& x);

/** What an object's __cuda_array_interface__ says of its memory (C order checked). */
struct CudaArrayView {
  std::uintptr_t ptr = 0;
  std::size_t nbytes = 0;
  py::dtype dtype;
  std::vector<py::ssize_t> shape;
  bool read_only = false;
  bool has_stream_key = false;            // version 3 names a stream (or None); version 2 has no key
  std::optional<std::uintptr_t> stream;   // the producer's stream to order after, if it names one
};

/**
 * `x`'s __cuda_array_interface__ read (cuda_array_interface.cpp); nullopt when it has none.
 * ArgumentError for an interface metalcall cannot use in place (masked, big-endian, strided).
 */
std::optional<CudaArrayView> read_cuda_array_interface(const py::handle& x);

/** True for a JAX array (jaxlib's ArrayImpl): immutable memory, whatever its DLPack capsule says. */
bool is_jax_array(PyObject* o);

/** An object with __cuda_array_interface__ as a Buffer on a CUDA `device`, in place (gpu_import.cpp). */
PyBuffer import_cuda_array(const py::handle& x, const Device& device);

/**
 * GPU memory of another library (DLPack reporting CUDA, or __cuda_array_interface__
 * without DLPack) as a Buffer on `device`; nullopt for anything else. Throws
 * ArgumentError when `device` cannot use that memory in place.
 */
std::optional<PyBuffer> import_gpu_memory(const py::handle& x, const Device& device);

class HostReferences;

/** What one call's foreign arguments share: producers' current streams (read once) and the streams waited for. */
struct ForeignCall {
  // The streams waited for (a call has a few at most; past kOrdered a stream may be waited for twice).
  static constexpr std::size_t kOrdered = 4;
  std::uintptr_t ordered[kOrdered] = {};
  std::size_t ordered_count = 0;
  std::optional<std::uintptr_t> torch_stream;  // on the device's GPU
  std::optional<std::uintptr_t> cupy_stream;
  // Where the call's Completion takes the producers from (see convert_arguments' hold_producers);
  // null: each foreign Buffer keeps its producer. `expected`: the call's argument count.
  HostReferences* holder = nullptr;
  std::size_t expected = 0;
};

/** A foreign tensor as a kernel argument: GPU memory as a Buffer (kept with its producer, or held by the call), or host memory. */
struct ForeignArgument {
  Buffer buffer;          // set for GPU memory
  void* host = nullptr;   // else host memory, used in place (the call's arguments keep it alive)
  std::size_t nbytes = 0;
  py::dtype dtype;
};

/**
 * A torch tensor (host or CUDA), a CuPy array or an object with __cuda_array_interface__ as a
 * kernel argument on `device`, described by attribute reads each call, imported once per object
 * (foreign_arguments.cpp) and ordered after its producer's stream once per call; nullopt when
 * `x` is none of them or only DLPack can take it (the caller imports it as before).
 */
std::optional<ForeignArgument> foreign_argument(const py::handle& x, const Device& device, ForeignCall& call);

/** True when `o`'s type is exactly torch.Tensor or cupy.ndarray (the call path's early test). */
bool is_foreign_tensor_type(PyObject* o);

/** Keeps the producer `x` alive while a Buffer (and queued work) uses its memory (Buffer::kept_with); let go of from any thread. */
std::shared_ptr<void> keep_producer_alive(PyObject* x);

/**
 * Around a wait that lets go of the GIL (declare it before the GilRelease): the producers' keep-alives
 * that the wait finds done and drops on this thread are released when the scope ends, with the GIL
 * back, instead of by a pending call each (the interpreter's trip to run one cost ~1 µs of a torch
 * tensor call's wait on the H200's host).
 */
class DeferReleases {
 public:
  DeferReleases();
  ~DeferReleases();
  DeferReleases(const DeferReleases&) = delete;
  DeferReleases& operator=(const DeferReleases&) = delete;
};

/** metalcall.Batch: `with dev.batch():` over the device's Batch for this thread. */
struct PyBatch {
  explicit PyBatch(Device d) : device(std::move(d)) {}
  PyBatch(const PyBatch&) = delete;
  PyBatch& operator=(const PyBatch&) = delete;
  ~PyBatch();  // discards a batch entered but never exited
  Device device;
  Batch batch;            // open between __enter__ and __exit__
  Completion completion;  // of the committed work, after __exit__
  bool entered = false, exited = false;
};

/** The state behind `with dev.record() as g:` — a recording, then the Graph it made. */
struct PyRecording {
  explicit PyRecording(Device d) : device(std::move(d)) {}
  PyRecording(const PyRecording&) = delete;
  PyRecording& operator=(const PyRecording&) = delete;
  ~PyRecording();  // discards a recording entered but never exited
  Device device;
  Batch recording;  // open between __enter__ and __exit__
  Graph graph;      // after __exit__
  bool entered = false, exited = false;
};

/** The integer value of an object with __index__ (int, np.int64, …); ArgumentError past 64 bits. */
long long index_value(const py::handle& h);

/** Shape from an int or a sequence of ints; ArgumentError for negatives. */
std::vector<py::ssize_t> shape_from(const py::handle& shape);

/** Python objects and buffer views that must stay alive while work uses them. */
class HostReferences {
 public:
  HostReferences() = default;
  HostReferences(const HostReferences&) = delete;
  HostReferences& operator=(const HostReferences&) = delete;
  ~HostReferences() { release(); }
  Py_buffer* add();  // a view slot owned by this object; fill it with PyObject_GetBuffer
  void keep(PyObject* object) { objects_.push_back(py::reinterpret_borrow<py::object>(object)); }
  /**
   * A foreign producer (torch tensor, CuPy array, interface object) whose GPU memory the call
   * uses in place: the call's Completion holds it until the work is known done (call_kernel).
   * `expected`: how many the call may hold at most (one allocation per call, not per producer).
   */
  void hold_producer(PyObject* object, std::size_t expected);
  std::vector<py::object> take_producers() { return std::move(producers_); }
  void take(HostReferences& other);
  void release();
  bool empty() const { return views_.empty() && objects_.empty() && producers_.empty(); }

 private:
  std::vector<std::unique_ptr<Py_buffer>> views_;
  std::vector<py::object> objects_;    // NumPy arrays used directly, without a buffer view
  std::vector<py::object> producers_;  // see hold_producer
};

/** Positional arguments where CPython keeps them: a tuple's items or a vectorcall's array (borrowed). */
struct PositionalArgs {
  PyObject* const* items;
  std::size_t size;
  static PositionalArgs of(const py::args& args) {
    return {reinterpret_cast<PyTupleObject*>(args.ptr())->ob_item, static_cast<std::size_t>(args.size())};
  }
};

/**
 * The host objects (NumPy arrays, other buffer-protocol objects) among args[first:],
 * with the views in `refs`, in one owner a batch or graph can keep alive (it takes
 * the GIL to let go of them); null when there are none.
 */
std::shared_ptr<void> keep_host_arguments(PositionalArgs args, std::size_t first, HostReferences& refs);

/**
 * Converts call arguments (after the grid) into Arguments for a kernel of `device`,
 * keeping views in `refs` (GPU tensors are imported onto `device`); `kernel` names its
 * parameters in errors. `device` may be null when `kernel` is given: its device is then
 * looked up only for the arguments that need it (foreign tensors), not on every call.
 * `hold_producers`: the caller submits the call now and hands refs' producers to its Completion
 * (call_kernel), so foreign GPU memory is bound as its cached import; otherwise (and while a batch
 * or recording is open) each foreign Buffer keeps its producer itself (Buffer::kept_with).
 */
void convert_arguments(PositionalArgs args, std::size_t first, const Device* device, std::vector<Argument>& out,
                       HostReferences& refs, const Kernel* kernel = nullptr, bool hold_producers = false);

/**
 * A new metalcall.Completion holding `completion` and the `producers` whose memory its work uses
 * in place (HostReferences::hold_producer): let go of once a wait finds the work done, or when
 * the handle is dropped (which waits).
 */
py::object wrap_completion(Completion completion, std::vector<py::object> producers = {});

/**
 * While alive on the main thread, waits on the device check for Ctrl-C (and other
 * signals) about every 20 ms: a handler that raises interrupts the wait, which throws
 * metalcall::Interrupted; the error translator re-raises what the handler raised.
 */
class WaitScope {
 public:
  WaitScope();
  WaitScope(const WaitScope&) = delete;
  WaitScope& operator=(const WaitScope&) = delete;

 private:
  std::optional<InterruptScope> scope_;
};

/** Sets the Python error a signal handler raised during an interrupted wait (else KeyboardInterrupt). */
void restore_interrupt();

/** Gives the core's warnings (metalcall/warnings.hpp) as metalcall.CacheWarning; with the GIL held. */
void give_warnings();

/** Where no exception can be raised (a Completion's dealloc): raise it at the interpreter's next check. */
void defer_interrupt();

/** Converts a Python value for a function constant. */
Argument constant_value(const py::handle& value);

}  // namespace metalcall::python
