// The interface every backend implements (DESIGN.md §1): an allocator, a compiler,
// programs (pipelines) and a queue. Core code talks to backends only through this.
// No Objective-C, CUDA or pybind11 here.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/buffer_directory.hpp"
#include "metalcall/device.hpp"
#include "metalcall/reflection.hpp"

namespace metalcall {

class CompletionState;

/**
 * Lets the thread that waits on a submission finish it itself, so that no backend
 * thread sits between the device and the waiter: the CPU queue runs the queued work
 * on the waiting thread, CUDA synchronises on the submission's end event there. A
 * statement call `fn(n, a, b, c)` drops its Completion, which waits at once.
 * Drivers are queues, which live as long as their device: the whole process.
 */
class CompletionDriver {
 public:
  /** Finishes `state` (and earlier work) if the device is done with it. Never blocks. */
  virtual void poll(CompletionState& state) { (void)state; }
  /** Called by a waiter before it blocks: may finish `state`'s work (and earlier work) on this thread. */
  virtual void wait(CompletionState& state) = 0;
  /** True when wait() honours the thread's InterruptScope (the CPU runs work in chunks and
   *  checks between them); otherwise an interruptible waiter polls instead of calling wait(). */
  virtual bool waits_interruptibly() const { return false; }
  /** `state` was asked to stop (request_cancel): a backend whose running work must be told does it here. */
  virtual void cancel(CompletionState& state) { (void)state; }

 protected:
  ~CompletionDriver() = default;
};

/** Completion of one submission; the backend calls finish() exactly once. */
class CompletionState {
 public:
  explicit CompletionState(bool submitted = true) : submitted_(submitted) {}
  void finish(std::exception_ptr error, double device_seconds);
  /**
   * Blocks until finished, after asking the driver (if any) to finish the work here.
   * `interruptible`: under an InterruptScope whose check fires, cancels the work and
   * throws Interrupted (metalcall/interrupt.hpp).
   */
  void wait(bool interruptible = true);
  /** Like wait(), but when interrupted still waits for the work to stop before throwing
   *  Interrupted: the work borrows the caller's memory (NumPy arrays etc.). */
  void wait_for_borrowed_memory();
  /** Waits at most `seconds` without running the work on this thread; true when finished
   *  (its error, if any, is not thrown). Interruptible like wait(). */
  bool wait_for(double seconds);
  /**
   * Asks the backend to stop the work early: work that has not started is skipped, running
   * CPU kernels stop at their next loop or chunk, CUDA kernels at their next loop check.
   * `reason` (a string literal) ends up in the work's ExecutionError; the first one stays.
   */
  void request_cancel(const char* reason = "interrupted");
  const std::atomic<bool>& cancel_flag() const { return cancel_; }
  /** Why the work was cancelled (request_cancel's reason); null if it was not. */
  const char* cancel_reason() const { return cancel_reason_.load(std::memory_order_acquire); }
  /** True once finished; asks the driver (without blocking) when there is one. */
  bool done();
  /** True once finished, as far as is known here (asks no driver). */
  bool finished() const { return done_.load(std::memory_order_acquire); }
  /** Seconds the device spent on the work; NaN when the backend did not time it. */
  double device_seconds() const { return seconds_; }
  bool submitted() const { return submitted_.load(std::memory_order_acquire); }
  void mark_submitted() { submitted_.store(true, std::memory_order_release); }
  /** Set by a backend when it queues the work; `ticket` is the backend's name for it. */
  void drive_with(CompletionDriver* driver, std::uint64_t ticket = 0);
  std::uint64_t ticket() const { return ticket_; }
  /** The backend driving the work (set once it is queued); null before, or without one. */
  CompletionDriver* driver() const { return driver_.load(std::memory_order_acquire); }

 private:
  /** Until finished, or the deadline (if any) passed; false then. Throws Interrupted. */
  bool block(bool interruptible, bool drive, const std::chrono::steady_clock::time_point* deadline);
  std::atomic<bool> done_{false};
  std::atomic<bool> cancel_{false};
  std::atomic<const char*> cancel_reason_{nullptr};
  std::atomic<bool> submitted_;
  std::atomic<CompletionDriver*> driver_{nullptr};
  std::uint64_t ticket_ = 0;  // written before driver_ is published
  std::mutex mutex_;
  std::condition_variable cv_;
  std::exception_ptr error_;
  double seconds_ = 0;
};

/**
 * METALCALL_POISON_UNINITIALIZED=1: backends fill memory they hand out uninitialized
 * (allocate_uninitialized: dev.empty(uninitialized=True), metalcall.numpy's result buffers) with
 * 0xFF bytes (NaN in every float type, all ones in integers), so that a kernel that reads what it
 * did not write gives a wrong answer in tests instead of the zeros fresh memory happened to hold.
 * Read once, at the first use; inline, as every CPU launch asks (a load and a branch, no call).
 */
bool poison_uninitialized_in_environment();  // core/poison.cpp
inline bool poison_uninitialized() {
  static const bool wanted = poison_uninitialized_in_environment();
  return wanted;
}

/** Device memory. Backends subclass it to own the allocation. */
class BufferStorage {
 public:
  BufferStorage(void* data, std::size_t nbytes, bool host_visible = true)
      : data_(data), nbytes_(nbytes), host_visible_(host_visible) {}
  virtual ~BufferStorage();
  BufferStorage(const BufferStorage&) = delete;
  BufferStorage& operator=(const BufferStorage&) = delete;

  void* data() const { return data_; }
  std::size_t nbytes() const { return nbytes_; }
  /** False for device memory imported from another library (a torch CUDA tensor): the host cannot touch it. */
  bool host_visible() const { return host_visible_; }
  /** The device whose kernels may use this memory (set by Device::allocate/wrap); null: unchecked. */
  const DeviceInfo* home() const { return home_; }
  void set_home(const DeviceInfo* home) { home_ = home; }
  /** Handed to another library in place (Buffer::mark_shared): a cache must not reuse it. */
  void mark_shared() { shared_.store(true, std::memory_order_relaxed); }
  bool shared() const { return shared_.load(std::memory_order_relaxed); }
  /** Memory its owner lets no one write (Device::wrap's read_only): kernels bind it to const parameters only. */
  void set_read_only() { read_only_ = true; }
  bool read_only() const { return read_only_; }
  /** Counts nbytes() in `in_use` until destroyed (Device::allocate; `in_use` outlives the storage). */
  void count_in(std::atomic<std::size_t>* in_use);
  /** Lists the memory in `directory` until destroyed (Device::allocate; `directory` outlives the storage). */
  void list_in(BufferDirectory* directory, const std::shared_ptr<BufferStorage>& self);
  /**
   * Copies `n` bytes from `offset` to `dst`: host memory or a new allocation of any
   * device (never overlapping). Called after wait_idle(). The default is memcpy;
   * backends whose memory the host cannot read, or that copy faster, override it.
   */
  virtual void copy_range_to(void* dst, std::size_t offset, std::size_t n) const;
  /** copy_range_to into host memory (Buffer::read); backends with a faster path for it override it. */
  virtual void read_to_host(void* dst, std::size_t offset, std::size_t n) const { copy_range_to(dst, offset, n); }
  void copy_to(void* dst, std::size_t n) const { copy_range_to(dst, 0, n); }
  /**
   * read_to_host ordered after `use`, the storage's unfinished last use, without waiting for it
   * first: one wait for both (a CUDA copy queued on the stream behind the kernel). False when this
   * storage cannot (the default), or not for `use`: the caller waits, then read_to_host.
   */
  virtual bool read_after(const CompletionState& use, void* dst, std::size_t offset, std::size_t n) const {
    (void)use, (void)dst, (void)offset, (void)n;
    return false;
  }
  /**
   * Copies `n` bytes of host memory `src` into the start of this storage. Called after
   * wait_idle(). The default is memcpy (host-visible storage only); backends that place
   * memory where kernels use it override it.
   */
  virtual void copy_from(const void* src, std::size_t n);

  /** Hazard tracking: queues are in order, so the last use is enough to wait on. */
  void set_last_use(const std::shared_ptr<CompletionState>& use);
  void wait_idle();
  /** The last use if it was submitted and is not known to be finished (else null). */
  std::shared_ptr<CompletionState> unfinished_use();

 protected:
  void* data_;
  std::size_t nbytes_;
  bool host_visible_;
  bool read_only_ = false;  // set once, before the storage is shared

 private:
  const DeviceInfo* home_ = nullptr;  // backend devices live for the whole process
  std::atomic<std::size_t>* in_use_ = nullptr;  // a backend device's count: lives as long
  BufferDirectory* directory_ = nullptr;         // a backend device's: lives as long
  std::atomic<bool> shared_{false};
  std::mutex mutex_;
  std::shared_ptr<CompletionState> last_use_;
};

/** A pipeline: one kernel of a library, specialised, ready to dispatch. */
class Program {
 public:
  explicit Program(KernelInfo info) : info_(std::move(info)) {}
  virtual ~Program() = default;
  const KernelInfo& info() const { return info_; }
  /** Most threads an automatically sized threadgroup gets; 0: the kernel's limit. */
  unsigned automatic_threadgroup_limit() const { return automatic_threadgroup_limit_; }

 protected:
  KernelInfo info_;
  unsigned automatic_threadgroup_limit_ = 0;
};

/** A compiled library as a backend holds it. */
class BackendLibrary {
 public:
  virtual ~BackendLibrary() = default;
  virtual std::vector<std::string> function_names() const = 0;
  /** Throws ArgumentError for an unknown name or bad constants. */
  virtual std::shared_ptr<Program> make_program(const std::string& name,
                                                const std::vector<FunctionConstant>& constants) = 0;
};

/** One argument as the backend receives it, indexed by parameter position. */
struct BoundArgument {
  ParamKind kind = ParamKind::builtin;
  std::shared_ptr<BufferStorage> buffer;  // a Buffer argument
  // Host memory that lies inside a Buffer of the kernel's device (np.asarray(buf)[4:]) is that
  // Buffer from `offset`, `view_nbytes` long: used in place, its hazards tracked on the Buffer.
  // Like host memory, a call that binds one returns only when done (the caller reads the view).
  std::size_t offset = 0;
  std::size_t view_nbytes = 0;            // 0: not a view (the whole Buffer)
  void* host_data = nullptr;              // foreign host memory (used in place or copied)
  std::size_t host_nbytes = 0;
  bool written = false;                   // the kernel may write it
  std::vector<std::uint8_t> bytes;        // packed scalar or struct (reference / value)
  std::size_t threadgroup_length = 0;     // [[threadgroup(i)]] byte length
  Texture texture;                        // [[texture(i)]]: buffer is its storage, bytes the kernel's descriptor
  // An array of N textures: elements 1 .. N-1 and their storage (element 0 is texture, buffer);
  // bytes holds the N descriptors.
  std::vector<Texture> more_textures;
  std::vector<std::shared_ptr<BufferStorage>> more_buffers;
  Sampler sampler;                        // [[sampler(i)]]: bytes is the kernel's descriptor
  // The parameter does not exist in this specialisation (a false [[function_constant]]):
  // nothing is bound; bytes holds zeros of its size for translated kernels, a pointer is null.
  bool absent = false;

  /** Back to a default-constructed argument, cheaply (what holds memory is let go). */
  void reset() {
    kind = ParamKind::builtin;
    buffer.reset();
    offset = 0;
    view_nbytes = 0;
    host_data = nullptr;
    host_nbytes = 0;
    written = false;
    bytes.clear();
    threadgroup_length = 0;
    if (texture.storage()) texture = Texture();
    more_textures.clear();
    more_buffers.clear();
    sampler = Sampler();
    absent = false;
  }

  /** Host address of the argument's memory, whatever its kind. */
  void* address() const {
    // Textures and samplers reach translated kernels as descriptors (core/texture.cpp).
    if (kind == ParamKind::texture || kind == ParamKind::sampler) return const_cast<std::uint8_t*>(bytes.data());
    if (buffer) return static_cast<char*>(buffer->data()) + offset;
    if (host_data) return host_data;
    return bytes.empty() ? nullptr : const_cast<std::uint8_t*>(bytes.data());
  }
  /** Bytes of a Buffer (or view of one) or of host memory the argument binds. */
  std::size_t memory_nbytes() const {
    if (buffer) return view_nbytes ? view_nbytes : buffer->nbytes();
    return host_data ? host_nbytes : 0;
  }
};

/** One validated kernel call. Sizes are final: the backend must not change them. */
struct DispatchCommand {
  std::shared_ptr<Program> program;
  std::uint32_t grid[3] = {1, 1, 1};
  std::uint32_t threadgroup[3] = {1, 1, 1};
  std::vector<BoundArgument> args;  // one per parameter, by position
  // Threads per SIMD-group to run with; 0: the backend's own. Only the CPU backend takes another
  // (a power of two, 4 to 64): the Metal simulator runs each pipeline at its threadExecutionWidth.
  std::uint32_t simd_width = 0;
  // Bytes of threadgroup memory a group may use, its variables and [[threadgroup(i)]] lengths
  // together; 0: Apple GPUs' 32 KiB. Only the CPU backend takes another: the Metal simulator's
  // family's (apple3: 16 KiB), which its kernels' own variables are checked against.
  std::uint64_t threadgroup_memory_limit = 0;
  // Threadgroup memory reads as 0xFF bytes until each group writes it (as Metal leaves it
  // undefined): the Metal simulator's calls, and every call under METALCALL_POISON_UNINITIALIZED=1.
  // Only the CPU backend takes it; its translations carry the poisoning, switched per launch.
  bool poison_threadgroup = false;
  bool uses_host_memory() const;
};

/** A backend's replayable form of recorded calls (CUDA: an instantiated CUDA graph). */
class BackendGraph {
 public:
  virtual ~BackendGraph() = default;
};

class BackendDevice {
 public:
  virtual ~BackendDevice() = default;
  /**
   * Held by core from marking a submission's buffers (hazard tracking) until the backend has
   * queued it, so that every buffer names its uses in queue order. One per backend device:
   * the Devices that share one (Metal's timing=True) share the lock.
   */
  std::mutex& submit_mutex() { return submit_mutex_; }
  virtual const DeviceInfo& info() const = 0;
  /** New memory, zero-filled (as on every backend). */
  virtual std::shared_ptr<BufferStorage> allocate(std::size_t nbytes) = 0;
  /** New memory whose contents may be anything (a reused block); backends without a cache zero it. */
  virtual std::shared_ptr<BufferStorage> allocate_uninitialized(std::size_t nbytes) { return allocate(nbytes); }
  /** Bytes of freed memory the backend keeps for reuse. */
  virtual std::size_t cached_bytes() { return 0; }
  /** Frees the memory kept for reuse. */
  virtual void empty_cache() {}
  /**
   * The device's free and total memory as its driver says. The default (backends that cannot
   * ask) is the device's memory_size and that less the bytes of live Buffers.
   */
  virtual void device_memory(std::size_t* free_bytes, std::size_t* total_bytes) {
    *total_bytes = info().memory_size;
    const std::size_t used = bytes_in_use_.load(std::memory_order_relaxed);
    *free_bytes = *total_bytes > used ? *total_bytes - used : 0;
  }
  /** Bytes of this device's live Buffers (BufferStorage::count_in). */
  std::atomic<std::size_t>& bytes_in_use() { return bytes_in_use_; }
  /** Where this device's live Buffers are in host memory (BufferStorage::list_in). */
  BufferDirectory& buffer_directory() { return buffer_directory_; }
  /**
   * Memory someone else owns that this device's kernels can use in place (a DLPack
   * or CUDA-array-interface import), kept with `owner`; null when this backend
   * cannot use foreign memory. May throw ArgumentError (memory of another device).
   */
  virtual std::shared_ptr<BufferStorage> wrap(void* data, std::size_t nbytes, std::shared_ptr<void> owner) {
    (void)data;
    (void)nbytes;
    (void)owner;
    return nullptr;
  }
  /** The native stream this device's work is queued on (CUDA: its CUstream); 0 when none. */
  virtual std::uintptr_t stream_handle() { return 0; }
  /** Makes later work wait for what is queued now on a native stream of this backend (no host wait). */
  virtual void wait_for_stream(std::uintptr_t stream) { (void)stream; }
  /** Row pitch alignment a texture of `format` needs on this device (Metal: linear textures); 1: packed rows. */
  virtual std::size_t texture_row_alignment(const PixelFormat& format) {
    (void)format;
    return 1;
  }
  /** ArgumentError when this device cannot bind textures of `type` (called when one is created). */
  virtual void check_texture(const TextureDescriptor& descriptor) { (void)descriptor; }
  /** Identity of the compiler and its version, for cache keys. */
  virtual std::string compiler_identity() = 0;
  /** Compiles MSL; throws CompileError. Must be safe to call from several threads. */
  virtual std::shared_ptr<BackendLibrary> compile(const std::string& source,
                                                  const CompileOptions& options) = 0;
  /** Loads a precompiled library; backends without one throw DeviceError. */
  virtual std::shared_ptr<BackendLibrary> load_library(const std::vector<std::uint8_t>& bytes);
  /**
   * Runs `commands` in order after all earlier submissions, then calls
   * completion->finish(). `caller_waits` says the caller will block on it at once
   * (foreign memory), so running on the calling thread is best. If it throws,
   * it may or may not have finished `completion`; the core finishes it if not.
   */
  virtual void submit(std::vector<DispatchCommand>&& commands,
                      const std::shared_ptr<CompletionState>& completion, bool caller_waits) = 0;
  /** Waits for all submitted work. */
  virtual void synchronize() = 0;
  /** Device::stop_all_work: stop what is queued and running, and all later work. */
  virtual void stop_all(const char* reason) { (void)reason; }
  /**
   * A replayable form of recorded `commands` (which use no host memory), or null:
   * then each replay submits the commands again. May throw only for a backend fault.
   */
  virtual std::shared_ptr<BackendGraph> make_graph(const std::vector<DispatchCommand>& commands) {
    (void)commands;
    return nullptr;
  }
  /** Runs a graph from make_graph() as one submission, like submit(); keeps `graph` until done. */
  virtual void replay(const std::shared_ptr<BackendGraph>& graph, const std::shared_ptr<CompletionState>& completion) {
    (void)graph;
    (void)completion;
  }
  /**
   * Runs one small call at once on the calling thread if the queue is idle, and
   * returns true with the time it took; false leaves it for submit(). Saves the
   * queue's bookkeeping on the calls where overhead matters most.
   */
  virtual bool run_now(const DispatchCommand&, double* device_seconds) {
    (void)device_seconds;
    return false;
  }

 private:
  std::mutex submit_mutex_;
  std::atomic<std::size_t> bytes_in_use_{0};
  BufferDirectory buffer_directory_;
};

/**
 * A backend's submit() or replay() calls this once the submission's place in its queue is
 * fixed and before it runs any of it on the calling thread: it releases the submit lock that
 * core holds (BackendDevice::submit_mutex), so that work run there does not hold up other
 * threads' submissions. Without it the lock is released when submit() returns.
 */
void submission_queued();

/** How a backend makes itself known to the device registry. */
struct BackendEntry {
  std::string name;  // "metal", "cuda", "cpu"
  int priority = 0;  // the default device is the available one with the highest priority
  /** Devices present; empty (never throws) when the backend cannot run here. */
  std::function<std::vector<DeviceInfo>()> enumerate;
  /** Why enumerate() found nothing, and how to fix it. */
  std::function<std::string()> unavailable_reason;
  std::function<std::shared_ptr<BackendDevice>(int index, const DeviceOptions& options)> open;
  /** False: opened by name only, never listed by Device::list() nor chosen as a default (the Metal simulator). */
  bool listed = true;
  /** True where the backend has a sandboxed device (DeviceOptions::sandbox); null: never. */
  std::function<bool()> sandbox_available;
};

void register_backend(BackendEntry entry);

}  // namespace metalcall
