// Device, Library, Kernel and Batch: the public C++ API (DESIGN.md §2).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "metalcall/argument.hpp"
#include "metalcall/buffer.hpp"
#include "metalcall/completion.hpp"
#include "metalcall/reflection.hpp"
#include "metalcall/texture.hpp"

namespace metalcall {

class DeviceImpl;
class LibraryImpl;
class KernelImpl;
class BatchImpl;
class GraphImpl;

/** What a device is and can do. */
struct DeviceInfo {
  std::string name;              // "Apple M2", "CPU (x86_64, 16 threads)", "NVIDIA H100"
  std::string backend;           // "metal", "cuda" or "cpu"
  int index = 0;                 // index among the devices of its backend
  std::string architecture;      // GPU family / compute capability / CPU ISA
  unsigned max_threads_per_threadgroup = 0;
  unsigned simd_width = 32;
  bool unified_memory = false;   // host and device share memory
  std::uint64_t memory_size = 0;           // bytes the device may use
  std::uint64_t max_buffer_length = 0;     // largest single buffer, bytes
  std::uint64_t threadgroup_memory_length = 0;  // bytes per threadgroup
  std::uint64_t registry_id = 0;           // Metal registry id; 0 elsewhere
};

/** A device's memory as its allocator sees it (Device::memory_info). */
struct MemoryInfo {
  std::uint64_t in_use = 0;        // bytes of this device's live Buffers (allocated here, not imported)
  std::uint64_t cached = 0;        // bytes of freed Buffers kept for reuse (Device::empty_cache frees them)
  std::uint64_t device_free = 0;   // what the device (CPU: the system) has free, as its driver says
  std::uint64_t device_total = 0;  // the device's memory
};

/** Whether a CPU device runs kernels in a sandboxed worker process (docs/security.md). */
enum class SandboxMode {
  automatic,  // on for checked CPU devices where the sandbox exists (Linux), off otherwise
  off,        // in this process: kernel source is trusted code
  on,         // in a worker process under a system call filter: untrusted source (Linux only)
};

struct DeviceOptions {
  /** CPU only: bounds-check every buffer access and raise ExecutionError. */
  bool checked = false;
  /**
   * CPU only (Linux): compile here, but load and run kernels in a separate worker
   * process under a system call filter, on Buffers in shared memory, so that kernel
   * source need not be trusted. Device::options() reports `off` or `on`.
   */
  SandboxMode sandbox = SandboxMode::automatic;
  /**
   * Time every call on the device (Completion::gpu_time). The CPU and Metal time
   * every call anyway; CUDA times batches always and single calls only with this
   * set, as two timed events cost about 2 µs per call (docs/design.md).
   */
  bool timing = false;
  /**
   * Device("metal-sim") only: the GPU family the Metal simulator models ("apple7", "intel",
   * "amd", ... docs/metal-backend.md); empty: METALCALL_METAL_SIM_FAMILY, else "apple7".
   */
  std::string family;
  /**
   * Seconds a single dispatch may run before it is stopped (its Completion then raises
   * ExecutionError saying so; the device and its Buffers stay usable); 0: no limit.
   * CPU and CUDA (docs/design.md, "Stopping kernels").
   */
  double kernel_timeout = 0;
};

struct CompileOptions {
  std::vector<std::pair<std::string, std::string>> defines;  // preprocessor macros
  bool fast_math = true;           // Metal's default
  std::string language_version;    // e.g. "3.1"; empty: the newest the device has
};

/** A value for a [[function_constant(i)]], by name or by index. */
struct FunctionConstant {
  std::string name;  // empty when given by index
  int index = -1;
  Argument value;    // integer, floating or boolean
  /**
   * A vector constant (`constant ushort2 s [[function_constant(2)]]`): one integer, floating or
   * boolean value per component, in order (`value` is then unused). Empty for a scalar constant.
   * (`= {}`: an embedder's `FunctionConstant{"scale", -1, value}` stays free of
   * -Wmissing-field-initializers, as before vector constants.)
   */
  std::vector<Argument> components = {};
};

class Kernel;
class Batch;
class Graph;
class Device;

/** A compiled MSL library: the kernels of one source. */
class Library {
 public:
  Library() = default;
  explicit Library(std::shared_ptr<LibraryImpl> impl) : impl_(std::move(impl)) {}
  std::vector<std::string> function_names() const;
  bool has_function(const std::string& name) const;
  /** The kernel `name`, specialised with `constants`; ArgumentError if there is none. */
  Kernel function(const std::string& name, const std::vector<FunctionConstant>& constants = {}) const;
  const std::shared_ptr<LibraryImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<LibraryImpl> impl_;
};

/** A kernel ready to run (a pipeline). Cheap to copy. */
class Kernel {
 public:
  Kernel() = default;
  explicit Kernel(std::shared_ptr<KernelImpl> impl) : impl_(std::move(impl)) {}
  const KernelInfo& info() const;
  const std::string& name() const { return info().name; }
  /** The device the kernel was compiled for and runs on. */
  Device device() const;
  /**
   * Runs the kernel over `shape.grid` threads with `args` bound by order to its
   * [[buffer(i)]] parameters. Returns at once unless an argument is foreign host
   * memory (then it returns after the memory is written back). Inside an open
   * batch of this thread the call is recorded, not submitted.
   */
  Completion operator()(const LaunchShape& shape, const std::vector<Argument>& args) const;
  const std::shared_ptr<KernelImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<KernelImpl> impl_;
};

/** Records the calls made on this thread into one submission, committed on commit(). */
class Batch {
 public:
  Batch() = default;  // no batch: see Device::current_batch()
  explicit Batch(std::shared_ptr<BatchImpl> impl) : impl_(std::move(impl)) {}
  /**
   * Submits what was recorded. Returns once the work has finished if a call used
   * foreign host memory or the batch holds keep-alives; at once otherwise.
   */
  Completion commit();
  /** Drops what was recorded without running it, and releases the keep-alives. */
  void discard();
  std::size_t size() const;
  /**
   * Keeps `owner` alive while the recorded work may use what it owns: pass the
   * owner of host memory given to a call recorded in this batch (a Python array,
   * a std::vector in a shared_ptr, …), whose caller may let go of it before the
   * commit. A batch holding keep-alives commits synchronously (see commit()); they
   * are released by discard(), or after commit() when the last handle on the batch
   * is dropped. Call it from the thread that records into the batch, while it is
   * open; ArgumentError after commit() or discard().
   */
  void keep_alive(std::shared_ptr<void> owner);
  /**
   * Ends a recording (Device::begin_recording()) and returns the recorded calls as a
   * Graph; ArgumentError for a batch that is not a recording, or one already ended.
   */
  Graph end_recording();
  /** True for a batch made by Device::begin_recording(). */
  bool recording() const;
  /** False for an empty handle, e.g. current_batch() when no batch is open. */
  explicit operator bool() const { return static_cast<bool>(impl_); }
  const std::shared_ptr<BatchImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<BatchImpl> impl_;
};

/**
 * Calls recorded once (Device::begin_recording()) and replayed many times, each
 * replay one submission. The graph keeps every Buffer, program and host memory
 * its calls use alive; a replay reads and writes them as the calls would.
 */
class Graph {
 public:
  Graph() = default;
  explicit Graph(std::shared_ptr<GraphImpl> impl) : impl_(std::move(impl)) {}
  /**
   * Runs the recorded calls again, in order, as one submission. Returns at once,
   * or once the work has finished when the calls use host memory (as a call would).
   */
  Completion replay() const;
  /** How many calls were recorded. */
  std::size_t size() const;
  /**
   * Re-binds the arguments of recorded call `index` (buffers, host memory, scalars),
   * checked as a call would be; the grid, threadgroup and threadgroup memory stay as
   * recorded. Replays after this use the new arguments; one in flight is unaffected.
   * `owner` is kept alive with the graph (the owner of host memory in `args`).
   */
  void update(std::size_t index, const std::vector<Argument>& args, std::shared_ptr<void> owner = nullptr);
  explicit operator bool() const { return static_cast<bool>(impl_); }
  const std::shared_ptr<GraphImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<GraphImpl> impl_;
};

class Device {
 public:
  Device() = default;
  explicit Device(std::shared_ptr<DeviceImpl> impl) : impl_(std::move(impl)) {}

  /**
   * Opens a device. `spec` is "" (METALCALL_DEVICE, else the best: Metal, then CUDA,
   * then CPU), a backend ("cpu", "cuda", "metal"), a backend and index ("cuda:1"),
   * or a device name. Throws DeviceError with the reason when it is unavailable.
   */
  static Device open(const std::string& spec = "", const DeviceOptions& options = {});
  /** Opens the index-th entry of list() (metalcompute's Device(index)). */
  static Device open(int index, const DeviceOptions& options = {});
  /** Every device of every backend built in, best first. */
  static std::vector<DeviceInfo> list();
  /** Names of the backends compiled into this build. */
  static std::vector<std::string> backends();
  /**
   * Stops all work of every open device, and the work submitted after: queued work is
   * skipped, running kernels stop at their next loop check; each fails with ExecutionError
   * naming `reason` (a string literal). For the end of a process (the Python module calls
   * it at interpreter exit, so that work that never ends cannot keep the process alive).
   */
  static void stop_all_work(const char* reason);

  const DeviceInfo& info() const;
  const DeviceOptions& options() const;
  /** Compiles MSL; throws CompileError with the user's line and column. Cached by content. */
  Library compile(const std::string& source, const CompileOptions& options = {}) const;
  /** Loads a compiled library (.metallib) — Metal only. */
  Library load_library(const std::vector<std::uint8_t>& bytes) const;
  /**
   * A new Buffer of `nbytes`, zero-filled on the device unless `zeroed` is false (then its
   * contents are undefined: a reused block keeps old data). Freed Buffers' memory is cached
   * for reuse by size class; when the device is out of memory the cache is freed and the
   * allocation retried.
   */
  Buffer allocate(std::size_t nbytes, bool zeroed = true) const;
  /** In use, cached, and the device's free and total memory. */
  MemoryInfo memory_info() const;
  /** Frees the cached memory of freed Buffers (Buffers in use are untouched). */
  void empty_cache() const;
  /** A new texture, its texels zeroed; ArgumentError for sizes the type does not allow. */
  Texture texture(const TextureDescriptor& descriptor) const;
  /**
   * A Buffer over memory someone else owns (a DLPack import): `data` is used in
   * place, and `owner` is kept alive until the Buffer and every call using it are
   * gone. The CPU takes host memory; CUDA takes device memory of this GPU (the
   * Buffer is then not host_visible() unless the memory is managed). ArgumentError
   * elsewhere, or for memory of another GPU. `read_only`: the owner lets no one write the
   * memory (Buffer::read_only).
   */
  Buffer wrap(void* data, std::size_t nbytes, std::shared_ptr<void> owner, bool read_only = false) const;
  /**
   * A new Buffer on this device holding a copy of `source` (of any device), after
   * waiting for pending work on it: CPU<->GPU, and GPU<->GPU by the driver's copy.
   */
  Buffer copy(const Buffer& source) const;
  /**
   * The native stream this device queues its work on (CUDA: a CUstream), for
   * interoperability (DLPack's `stream` argument); 0 on backends without one.
   */
  std::uintptr_t stream_handle() const;
  /**
   * Makes this device's later work wait for the work queued so far on a native
   * stream of its backend (CUDA: a CUstream; 1 and 2 name the legacy and
   * per-thread default streams), without blocking the host. No-op elsewhere.
   */
  void wait_for_stream(std::uintptr_t stream) const;
  /** Waits for all work submitted to this device. */
  void synchronize() const;
  /**
   * Starts recording this thread's calls on this device into a batch. Batches do
   * not nest: ArgumentError if one is already open on this thread for this device.
   */
  Batch begin_batch() const;
  /**
   * Starts recording this thread's calls on this device for replay: the calls do
   * not run, and their Completions are done (having done nothing) when the
   * recording ends with Batch::end_recording(). A recording is a batch: it does not
   * nest with batches or recordings.
   */
  Batch begin_recording() const;
  /** The batch open on this thread for this device; an empty Batch when there is none. */
  Batch current_batch() const;

  const std::shared_ptr<DeviceImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<DeviceImpl> impl_;
};

}  // namespace metalcall
