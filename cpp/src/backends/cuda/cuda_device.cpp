// The CUDA backend (DESIGN.md §3 "CUDA execution"): MSL translated to CUDA C++,
// compiled by NVRTC (cuda_compiler), run on a stream (cuda_queue). libcuda and NVRTC
// are loaded at run time (cuda_api); without them the backend lists no device.
// This file: the GPUs present, managed memory (the host view of a Buffer is real
// memory, never more than the GPU has free), the device, and its registration.
#include "backends/cuda/cuda_device.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "backends/cuda/cuda_compiler.hpp"
#include "backends/cuda/cuda_queue.hpp"
#include "backends/translated/host_cxx.hpp"
#include "backends/translated/translated_library.hpp"
#include "core/backend.hpp"
#include "core/block_cache.hpp"
#include "core/interrupt.hpp"
#include "core/registry.hpp"
#include "metalcall/errors.hpp"
#include "metalcall/interrupt.hpp"

namespace metalcall::cuda {

std::string describe(CUresult r) { return api().error_text(r); }

void check(CUresult r, const std::string& what) {
  if (r != CUDA_SUCCESS) throw DeviceError("[cuda] " + what + " failed: " + describe(r));
}

// The driver keeps a current context per OS thread.
thread_local CUcontext t_current = nullptr;
void make_current(CUcontext c) {
  if (t_current == c) return;
  check(api().cuCtxSetCurrent(c), "cuCtxSetCurrent");
  t_current = c;
}

void free_device_memory(CUcontext c, CUdeviceptr p) {
  struct Free {
    CUcontext ctx;
    CUdeviceptr ptr;
  } f{c, p};
  run_blocking_wait(
      [](void* arg) {
        const Free& f = *static_cast<const Free*>(arg);
        try {
          make_current(f.ctx);
          api().cuMemFree(f.ptr);
        } catch (...) {
          // The context is failing: what it held goes with it.
        }
      },
      &f);
}

namespace {

// ---- the GPUs present ----

std::vector<DeviceProps> query_devices(std::string* problem) {
  std::vector<DeviceProps> out;
  const Api& a = api();
  if (!a.driver_ok) {
    *problem = a.driver_problem;
    return out;
  }
  if (!a.nvrtc_ok) {
    *problem = a.nvrtc_problem;
    return out;
  }
  int count = 0;
  CUresult r = a.cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS || count == 0) {
    *problem = r != CUDA_SUCCESS ? "cuDeviceGetCount failed: " + describe(r) : "the NVIDIA driver sees no GPU";
    return out;
  }
  for (int i = 0; i < count; ++i) {
    DeviceProps p;
    if (a.cuDeviceGet(&p.device, i) != CUDA_SUCCESS) continue;
    char name[256] = {};
    a.cuDeviceGetName(name, sizeof name - 1, p.device);
    auto attr = [&](int which, int fallback) {
      int v = 0;
      return a.cuDeviceGetAttribute(&v, which, p.device) == CUDA_SUCCESS ? v : fallback;
    };
    p.cc_major = attr(COMPUTE_CAPABILITY_MAJOR, 0);
    p.cc_minor = attr(COMPUTE_CAPABILITY_MINOR, 0);
    if (!attr(MANAGED_MEMORY, 0)) continue;  // buffers are managed memory
    p.max_block[0] = attr(MAX_BLOCK_DIM_X, 1024);
    p.max_block[1] = attr(MAX_BLOCK_DIM_Y, 1024);
    p.max_block[2] = attr(MAX_BLOCK_DIM_Z, 64);
    p.max_grid[0] = attr(MAX_GRID_DIM_X, 2147483647);
    p.max_grid[1] = attr(MAX_GRID_DIM_Y, 65535);
    p.max_grid[2] = attr(MAX_GRID_DIM_Z, 65535);
    p.smem_optin = std::max(attr(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 0), attr(MAX_SHARED_MEMORY_PER_BLOCK, 48 * 1024));
    std::size_t total = 0;
    a.cuDeviceTotalMem(&total, p.device);
    DeviceInfo& info = p.info;
    info.name = name;
    info.backend = "cuda";
    info.index = static_cast<int>(out.size());
    info.architecture = "sm_" + std::to_string(p.cc_major) + std::to_string(p.cc_minor);
    info.max_threads_per_threadgroup = static_cast<unsigned>(attr(MAX_THREADS_PER_BLOCK, 1024));
    info.simd_width = static_cast<unsigned>(attr(WARP_SIZE, 32));
    info.unified_memory = true;  // managed memory: buffers have a real host view
    info.memory_size = total;
    info.max_buffer_length = total;
    info.threadgroup_memory_length = p.smem_optin;
    info.registry_id = 0;
    out.push_back(std::move(p));
  }
  if (out.empty()) *problem = "no CUDA device supports managed memory";
  return out;
}

const std::vector<DeviceProps>& devices(std::string* problem = nullptr) {
  static auto& why = *new std::string;
  static const auto& all = *new std::vector<DeviceProps>([] {
    try {
      return query_devices(&why);
    } catch (const std::exception& e) {
      why = e.what();
      return std::vector<DeviceProps>{};
    }
  }());
  if (problem) *problem = why;
  return all;
}

// ---- memory ----

// Managed memory blocks of one GPU, and the cache of freed ones (core/block_cache.hpp): a
// cached block is reused for a Buffer of its size class, so allocating costs a lookup (and
// a zero fill on the GPU) instead of cuMemAllocManaged. A block is cached only once no
// submission holds its Buffer (the queue keeps a submission's Buffers until its end event),
// so the GPU is done with it. When the GPU is out of memory the cache is freed and the
// allocation retried.
class ManagedBlocks {
 public:
  ManagedBlocks(CUcontext ctx, std::size_t cache_limit) : ctx_(ctx), cache_(cache_limit) {}
  ~ManagedBlocks() {
    try {
      empty();
    } catch (...) {
    }
  }

  /** A block of `capacity` bytes; `reused` says it held a freed Buffer. Throws DeviceError. */
  BlockCache::Block take(std::size_t capacity, bool* reused) {
    BlockCache::Block b = cache_.take(capacity);
    *reused = b.data != nullptr;
    if (b.data) return b;
    make_current(ctx_);
    std::string refusal;
    for (int attempt = 0;; ++attempt) {
      if (fits(capacity, &refusal)) {
        CUdeviceptr ptr = 0;
        const CUresult r = api().cuMemAllocManaged(&ptr, capacity, CU_MEM_ATTACH_GLOBAL);
        if (r == CUDA_SUCCESS) return {reinterpret_cast<void*>(ptr), capacity};
        refusal = describe(r);
      }
      if (attempt == 1 || cache_.cached_bytes() == 0) break;
      empty();  // out of memory: free what the cache holds and retry once
    }
    throw DeviceError("[cuda] cannot allocate " + std::to_string(capacity) + " bytes: " + refusal);
  }
  void give_back(BlockCache::Block b) {
    if (!cache_.give(b)) free_now(b);
  }
  void free_now(BlockCache::Block b) { free_device_memory(ctx_, reinterpret_cast<CUdeviceptr>(b.data)); }
  void empty() {
    std::vector<BlockCache::Block> blocks = cache_.drain();
    if (blocks.empty()) return;
    for (const BlockCache::Block& b : blocks) free_device_memory(ctx_, reinterpret_cast<CUdeviceptr>(b.data));
  }
  std::size_t cached_bytes() const { return cache_.cached_bytes(); }

  /**
   * Copies n bytes at `src` to host memory `dst` through a small pinned buffer, on `stream`
   * (after the caller waited for the work on that memory); false when n is too large for it or
   * the driver cannot pin memory (then the caller copies from pageable memory). A scalar read
   * back this way took one pinned DMA where cuMemcpy to pageable memory staged it through the
   * driver's buffer on the legacy stream.
   */
  bool read_small(void* dst, CUdeviceptr src, std::size_t n, CUstream stream) {
    return through_pinned(dst, n, [&](void* pinned) {
      CUresult r = api().cuMemcpyDtoHAsync(pinned, src, n, stream);
      if (r == CUDA_SUCCESS) r = api().cuStreamSynchronize(stream);
      check(r, "cuMemcpyDtoHAsync (reading a buffer)");
      return true;
    });
  }
  /** read_small behind `use` on `queue`'s stream (CudaQueue::read_after): false when it cannot. */
  bool read_small_after(CudaQueue& queue, const CompletionState& use, void* dst, CUdeviceptr src, std::size_t n) {
    return through_pinned(dst, n, [&](void* pinned) { return queue.read_after(use, pinned, src, n); });
  }

 private:
  static constexpr std::size_t kSmallRead = 4096;
  // Pinned buffers of kSmallRead bytes, one per read at a time: a read queued behind a kernel
  // holds its buffer until the kernel is done, and another thread's read of a finished Buffer
  // takes another instead of waiting for that kernel. At most kSmallSlots (kept for the process).
  static constexpr std::size_t kSmallSlots = 8;
  void* take_slot() {
    std::lock_guard<std::mutex> lock(small_mutex_);
    if (!free_slots_.empty()) {
      void* slot = free_slots_.back();
      free_slots_.pop_back();
      return slot;
    }
    if (pinning_failed_ || slots_ >= kSmallSlots) return nullptr;  // the caller copies another way
    make_current(ctx_);
    void* slot = nullptr;
    if (api().cuMemAllocHost(&slot, kSmallRead) != CUDA_SUCCESS) {
      pinning_failed_ = true;
      return nullptr;
    }
    ++slots_;
    return slot;
  }
  void give_slot(void* slot) {
    std::lock_guard<std::mutex> lock(small_mutex_);
    free_slots_.push_back(slot);
  }
  // `copy(pinned)` fills the first n bytes of a pinned buffer and returns once they are there
  // (or false: it copied nothing); then they go to `dst`. A copy interrupted (Ctrl-C) may still
  // write its buffer: it is left to that copy (4 KiB leaked), and a later read pins another.
  template <class Copy>
  bool through_pinned(void* dst, std::size_t n, Copy&& copy) {
    if (n > kSmallRead) return false;
    void* slot = take_slot();
    if (!slot) return false;
    make_current(ctx_);
    bool copied = false;
    try {
      copied = copy(slot);
    } catch (const Interrupted&) {
      std::lock_guard<std::mutex> lock(small_mutex_);
      --slots_;
      throw;
    } catch (...) {
      give_slot(slot);
      throw;
    }
    if (copied) std::memcpy(dst, slot, n);
    give_slot(slot);
    return copied;
  }
  // Managed memory beyond what the GPU has free can hang the device: refuse it. Asked for
  // every new block, small ones too (a cached block needs no new memory): on a GPU that other
  // processes had filled (a JAX process preallocates 75% of it), a new 256-byte block was
  // granted, and zeroing it on the GPU faulted (CUDA_ERROR_ILLEGAL_ADDRESS), which leaves the
  // context unusable for the rest of the process. The query costs about a microsecond next to
  // cuMemAllocManaged's tens.
  static bool fits(std::size_t capacity, std::string* refusal) {
    constexpr std::size_t kReserve = 256ull << 20;
    std::size_t free_bytes = 0, total_bytes = 0;
    check(api().cuMemGetInfo(&free_bytes, &total_bytes), "cuMemGetInfo");
    const std::size_t usable = free_bytes > kReserve ? free_bytes - kReserve : 0;
    if (capacity <= usable) return true;
    *refusal = "the GPU has " + std::to_string(free_bytes) + " bytes free (of " + std::to_string(total_bytes) + ")";
    return false;
  }

  CUcontext ctx_;
  BlockCache cache_;
  std::mutex small_mutex_;          // guards the pinned buffers' bookkeeping
  std::vector<void*> free_slots_;   // pinned buffers not in use
  std::size_t slots_ = 0;           // pinned buffers in use or free
  bool pinning_failed_ = false;     // the driver could not pin memory: reads copy another way
};

// A Buffer's managed memory, first touched on the GPU: zeroed there and written from the
// host by DMA, so its pages start where kernels use them. (A host memset placed every page
// in host memory: allocating 40 MB took ~20 ms and the first kernel ~8 ms of page faults.)
class ManagedStorage : public BufferStorage {
 public:
  ManagedStorage(std::shared_ptr<ManagedBlocks> blocks, std::shared_ptr<CudaQueue> queue, CUcontext ctx,
                 CUdevice device, CUstream fill, std::size_t nbytes, bool zeroed)
      : BufferStorage(nullptr, nbytes), blocks_(std::move(blocks)), queue_(std::move(queue)), ctx_(ctx),
        device_(device), fill_(fill) {
    bool reused = false;
    block_ = blocks_->take(BlockCache::size_class(nbytes, kGranularity), &reused);
    data_ = block_.data;
    ptr_ = reinterpret_cast<CUdeviceptr>(block_.data);
    // New buffers read as zeros, as on the CPU; a new block is zeroed even when not asked,
    // so that its pages are first touched on the GPU.
    // METALCALL_POISON_UNINITIALIZED=1 fills an uninitialized one with 0xFF instead (core/backend.hpp).
    const bool poison = !zeroed && poison_uninitialized();
    if (!zeroed && reused && !poison) return;
    make_current(ctx_);
    const std::size_t fill_bytes = std::max<std::size_t>(nbytes, 16);
    const CUresult z = api().cuMemsetD8Async(ptr_, poison ? 0xFF : 0, fill_bytes, fill_);
    const CUresult w = z == CUDA_SUCCESS ? api().cuStreamSynchronize(fill_) : z;
    if (w != CUDA_SUCCESS) {
      blocks_->give_back(block_);
      throw DeviceError("[cuda] cannot zero a new buffer of " + std::to_string(nbytes) + " bytes: " + describe(w));
    }
  }
  // From pageable host memory the driver stages the copy; the sync makes it complete
  // before any later kernel (the fill stream is not ordered with the kernels' stream).
  void copy_from(const void* src, std::size_t n) override {
    if (!n) return;
    make_current(ctx_);
    CUresult r = api().cuMemcpyHtoDAsync(ptr_, src, n, fill_);
    // The copy may leave pages in host memory; ask for them on the GPU in bulk now rather
    // than by page faults over the next kernels.
    if (r == CUDA_SUCCESS) prefetch(n);
    if (r == CUDA_SUCCESS) r = api().cuStreamSynchronize(fill_);
    if (r != CUDA_SUCCESS) throw ExecutionError("[cuda] copying host data into a buffer failed: " + describe(r));
  }
  // The driver copies to host memory or to any GPU's memory (a peer copy): unified addressing.
  // (A copy from managed memory leaves its pages where they are: a host read of data() would move
  // them to the host, and the next kernel to use them would fault them back.) On the fill stream:
  // the caller waited for the work on this memory, and a synchronous cuMemcpy, on the legacy
  // default stream, would also wait for every kernel queued on the device's stream (a blocking one).
  void copy_range_to(void* dst, std::size_t offset, std::size_t n) const override {
    if (!n) return;
    make_current(ctx_);
    CUresult r = api().cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst), ptr_ + offset, n, fill_);
    if (r == CUDA_SUCCESS) r = api().cuStreamSynchronize(fill_);
    check(r, "cuMemcpyAsync (copying a buffer)");
  }
  void read_to_host(void* dst, std::size_t offset, std::size_t n) const override {
    if (n && !blocks_->read_small(dst, ptr_ + offset, n, fill_)) copy_range_to(dst, offset, n);
  }
  // A few values (a reduction's result) behind the kernel writing them: one wait, not two.
  bool read_after(const CompletionState& use, void* dst, std::size_t offset, std::size_t n) const override {
    return n && blocks_->read_small_after(*queue_, use, dst, ptr_ + offset, n);
  }
  ~ManagedStorage() override {
    try {
      // Memory another library used in place may still be in use on its streams: free it
      // (cuMemFree waits for the device) rather than cache it.
      if (shared()) blocks_->free_now(block_);
      else blocks_->give_back(block_);
    } catch (...) {
    }
  }

 private:
  // Blocks under 512 bytes share one size class; every block is at least 16 bytes.
  static constexpr std::size_t kGranularity = 512;
  // A hint: where the driver has neither form (or refuses), pages move on first touch.
  void prefetch(std::size_t n) {
    const Api& a = api();
    if (a.cuMemPrefetchAsync_v2) {
      CUmemLocation where{CU_MEM_LOCATION_TYPE_DEVICE, device_};
      if (a.cuMemPrefetchAsync_v2(ptr_, n, where, 0, fill_) == CUDA_SUCCESS) return;
    }
    if (a.cuMemPrefetchAsync) a.cuMemPrefetchAsync(ptr_, n, device_, fill_);
  }

  std::shared_ptr<ManagedBlocks> blocks_;
  std::shared_ptr<CudaQueue> queue_;  // the device's: read_after copies on its stream
  BlockCache::Block block_;
  CUcontext ctx_;
  CUdevice device_;
  CUstream fill_;  // the device's stream for zero fills and host writes
  CUdeviceptr ptr_ = 0;
};

// Device memory of another library (a torch or CuPy tensor), used in place and kept
// alive by `owner`. The host may not touch it unless it is managed memory. Copies
// go on the importing device's stream, which the import ordered after the producer's.
class ForeignStorage : public BufferStorage {
 public:
  ForeignStorage(void* data, std::size_t nbytes, bool managed, std::shared_ptr<void> owner,
                 std::shared_ptr<CudaQueue> queue)
      : BufferStorage(data, nbytes, managed), owner_(std::move(owner)), queue_(std::move(queue)) {}
  void copy_range_to(void* dst, std::size_t offset, std::size_t n) const override {
    queue_->copy(dst, static_cast<const unsigned char*>(data_) + offset, n);
  }
  void copy_from(const void* src, std::size_t n) override { queue_->copy(data_, src, n); }

 private:
  std::shared_ptr<void> owner_;
  std::shared_ptr<CudaQueue> queue_;
};

// What the driver knows of a foreign pointer: which GPU it is on, and whether it is managed.
// Host memory (pageable or pinned) is refused: kernels would fault or read it slowly.
bool foreign_is_managed(void* data, const DeviceProps& props) {
  const Api& a = api();
  const auto ptr = reinterpret_cast<CUdeviceptr>(data);
  unsigned managed = 0;  // the driver writes a bool: the rest stays zero
  if (a.cuPointerGetAttribute(&managed, POINTER_ATTRIBUTE_IS_MANAGED, ptr) != CUDA_SUCCESS) managed = 0;
  if (managed) return true;  // managed memory migrates to whichever GPU uses it
  unsigned memory_type = 0;
  const CUresult r = a.cuPointerGetAttribute(&memory_type, POINTER_ATTRIBUTE_MEMORY_TYPE, ptr);
  if (r != CUDA_SUCCESS || memory_type == CU_MEMORYTYPE_HOST) {
    throw ArgumentError("[cuda] the memory at " + std::to_string(ptr) + " is not GPU memory the CUDA driver knows (" +
                        (r != CUDA_SUCCESS ? describe(r) : std::string("it is host memory")) +
                        "); pass a CUDA tensor, or host memory as a NumPy array");
  }
  int ordinal = -1;
  a.cuPointerGetAttribute(&ordinal, POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr);
  if (ordinal != props.device) {
    throw ArgumentError("[cuda] the memory is on GPU " + std::to_string(ordinal) + " but this device is cuda:" +
                        std::to_string(props.info.index) + "; use mc.Device(\"cuda:" + std::to_string(ordinal) +
                        "\") or copy it to this GPU first");
  }
  return false;
}

class CudaDevice : public BackendDevice {
 public:
  CudaDevice(const DeviceProps& props, const DeviceOptions& options) : props_(props) {
    check(api().cuDevicePrimaryCtxRetain(&ctx_, props_.device), "cuDevicePrimaryCtxRetain");
    queue_ = std::make_shared<CudaQueue>(ctx_, props_, options.timing, options.kernel_timeout);
    make_current(ctx_);
    check(api().cuStreamCreate(&fill_stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    // No limit of its own: the cache is freed when an allocation finds the GPU full.
    blocks_ = std::make_shared<ManagedBlocks>(ctx_, static_cast<std::size_t>(props_.info.memory_size));
  }
  const DeviceInfo& info() const override { return props_.info; }
  std::shared_ptr<BufferStorage> allocate(std::size_t nbytes) override {
    return std::make_shared<ManagedStorage>(blocks_, queue_, ctx_, props_.device, fill_stream_, nbytes, true);
  }
  std::shared_ptr<BufferStorage> allocate_uninitialized(std::size_t nbytes) override {
    return std::make_shared<ManagedStorage>(blocks_, queue_, ctx_, props_.device, fill_stream_, nbytes, false);
  }
  std::size_t cached_bytes() override { return blocks_->cached_bytes(); }
  void empty_cache() override { blocks_->empty(); }
  void device_memory(std::size_t* free_bytes, std::size_t* total_bytes) override {
    make_current(ctx_);
    check(api().cuMemGetInfo(free_bytes, total_bytes), "cuMemGetInfo");
  }
  std::shared_ptr<BufferStorage> wrap(void* data, std::size_t nbytes, std::shared_ptr<void> owner) override {
    make_current(ctx_);
    const bool managed = nbytes ? foreign_is_managed(data, props_) : false;
    return std::make_shared<ForeignStorage>(data, nbytes, managed, std::move(owner), queue_);
  }
  std::uintptr_t stream_handle() override { return reinterpret_cast<std::uintptr_t>(queue_->stream()); }
  void wait_for_stream(std::uintptr_t stream) override {
    queue_->wait_for_stream(reinterpret_cast<CUstream>(stream));
  }
  std::string compiler_identity() override { return Nvrtc::instance().identity(props_.info.architecture); }
  std::shared_ptr<BackendLibrary> compile(const std::string& source, const CompileOptions& options) override {
    msl::FrontEndOptions front;
    front.target = msl::Target::cuda;
    front.defines = options.defines;
    front.language_version = options.language_version;
    front.preprocessor = translated::host_preprocessor("cuda");
    front.poison_threadgroup = poison_uninitialized();  // [[threadgroup(i)]] memory too (core/backend.hpp)
    const bool fast_math = options.fast_math;
    const std::string arch = props_.info.architecture;
    CUcontext ctx = ctx_;
    StopWord* stop = &queue_->stop_word();
    const DeviceProps& props = props_;
    return translated::TranslatedLibrary<CudaModules>::compile(
        source, std::move(front),
        [fast_math, arch, ctx, stop](const msl::Translation& translation, const std::string& user_source) {
          return std::make_shared<CudaModules>(ctx, *stop, translation, user_source, fast_math, arch);
        },
        [ctx, &props](const msl::TranslatedKernel& kernel, const std::shared_ptr<CudaModules>& modules) {
          return load_program(kernel, modules, ctx, props);
        });
  }
  void submit(std::vector<DispatchCommand>&& commands, const std::shared_ptr<CompletionState>& completion,
              bool) override {
    queue_->submit(std::move(commands), completion);
  }
  void synchronize() override { queue_->synchronize(); }
  void stop_all(const char* reason) override { queue_->stop_all(reason); }
  std::shared_ptr<BackendGraph> make_graph(const std::vector<DispatchCommand>& commands) override {
    return queue_->capture(commands);
  }
  void replay(const std::shared_ptr<BackendGraph>& graph, const std::shared_ptr<CompletionState>& completion) override {
    queue_->replay(graph, completion);
  }

 private:
  const DeviceProps& props_;
  CUcontext ctx_ = nullptr;
  std::shared_ptr<CudaQueue> queue_;
  CUstream fill_stream_ = nullptr;  // lives as long as the process's devices (never destroyed)
  std::shared_ptr<ManagedBlocks> blocks_;  // shared with the storages
};

}  // namespace
}  // namespace metalcall::cuda

namespace metalcall {

void register_cuda_backend() {
  BackendEntry entry;
  entry.name = "cuda";
  entry.priority = 50;  // below Metal, above the CPU
  entry.enumerate = [] {
    std::vector<DeviceInfo> out;
    for (const auto& d : cuda::devices()) out.push_back(d.info);
    return out;
  };
  entry.unavailable_reason = [] {
    std::string why;
    cuda::devices(&why);
    return why;
  };
  entry.open = [](int index, const DeviceOptions& options) -> std::shared_ptr<BackendDevice> {
    const auto& all = cuda::devices();
    if (index < 0 || index >= static_cast<int>(all.size())) throw DeviceError("[cuda] no CUDA device " + std::to_string(index));
    return std::make_shared<cuda::CudaDevice>(all[index], options);
  };
  register_backend(std::move(entry));
}

}  // namespace metalcall