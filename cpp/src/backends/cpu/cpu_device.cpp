// The CPU backend's device: host memory, the device's description, compiles through
// the translated wing (cpu_compiler builds the code), calls through cpu_queue.
// Always available.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>

#include "backends/cpu/cpu_compiler.hpp"
#include "backends/cpu/cpu_dispatch.hpp"
#include "backends/cpu/cpu_queue.hpp"
#include "backends/cpu/kernel_stop.hpp"
#include "backends/cpu/stack_guard.hpp"
#include "backends/cpu/sandbox/sandbox_device.hpp"
#include "backends/translated/host_cxx.hpp"
#include "backends/translated/translated_library.hpp"
#include "core/backend.hpp"
#include "core/block_cache.hpp"
#include "core/registry.hpp"
#include "metalcall/errors.hpp"

namespace metalcall::cpu {

namespace {

// ---- memory ----

// Large buffers are page-aligned blocks from mmap (zero-filled lazily by the kernel),
// cached by size class when freed: a reused block's pages are already there, so a result
// buffer (allocate_uninitialized) costs no page faults. Small ones come from malloc,
// which is a cache already.
constexpr std::size_t kMmapThreshold = 1 << 20;
// A zeroed reuse of a block up to this size is a memset; a larger one gives its pages back
// (MADV_DONTNEED: they read as zeros again, faulted in lazily like a new mapping).
constexpr std::size_t kMemsetLimit = 8 << 20;

std::size_t page_size() {
  static const std::size_t size = [] {
    const long p = sysconf(_SC_PAGE_SIZE);
    return p > 0 ? static_cast<std::size_t>(p) : std::size_t(4096);
  }();
  return size;
}

// The mapped blocks of one device and the cache of its freed ones.
class HostBlocks {
 public:
  explicit HostBlocks(std::size_t cache_limit) : cache_(cache_limit) {}
  ~HostBlocks() { empty(); }

  /** A block of `capacity` bytes: cached if one is, else mapped (emptying the cache and
   *  retrying when the system refuses). `reused` says whether it held a freed Buffer. */
  BlockCache::Block take(std::size_t capacity, bool* reused) {
    BlockCache::Block b = cache_.take(capacity);
    *reused = b.data != nullptr;
    if (b.data) return b;
    void* p = mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      empty();
      p = mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) return {};
    }
#ifdef MADV_HUGEPAGE
    // Huge pages: the first touch of a large buffer faults 512 times less often.
    madvise(p, capacity, MADV_HUGEPAGE);
#endif
    return {p, capacity};
  }
  void give_back(BlockCache::Block b) {
    if (!cache_.give(b)) munmap(b.data, b.capacity);
  }
  void empty() {
    for (const BlockCache::Block& b : cache_.drain()) munmap(b.data, b.capacity);
  }
  std::size_t cached_bytes() const { return cache_.cached_bytes(); }

 private:
  BlockCache cache_;
};

class HostStorage : public BufferStorage {
 public:
  HostStorage(std::size_t nbytes, bool zeroed, std::shared_ptr<HostBlocks> blocks)
      : BufferStorage(nullptr, nbytes), blocks_(std::move(blocks)) {
    if (nbytes <= kInline) {
      data_ = inline_data();  // zero-initialised with the object
    } else if (nbytes >= kMmapThreshold) {
      bool reused = false;
      block_ = blocks_->take(BlockCache::size_class(nbytes, page_size()), &reused);
      if (!block_.data) throw_out_of_memory();
      data_ = block_.data;
      if (reused && zeroed) {
        if (block_.capacity <= kMemsetLimit || madvise(data_, block_.capacity, MADV_DONTNEED) != 0)
          std::memset(data_, 0, nbytes);
      }
    } else {
      void* p = nullptr;
      if (posix_memalign(&p, 64, nbytes) != 0) throw_out_of_memory();
      // Zeroed only when asked, as a reused mapped block is: the memset of an uninitialized
      // result buffer (metalcall.numpy's) was most of its allocation (391 KiB: 4.8 -> 1.0 µs).
      if (zeroed) std::memset(p, 0, nbytes);
      data_ = p;
    }
    if (!zeroed && poison_uninitialized()) std::memset(data_, 0xFF, nbytes);
  }
  ~HostStorage() override {
    if (data_ == inline_data()) return;
    if (block_.data && shared()) munmap(block_.data, block_.capacity);  // as its consumer may expect: never reused
    else if (block_.data) blocks_->give_back(block_);
    else std::free(data_);
  }

 private:
  [[noreturn]] void throw_out_of_memory() const {
    throw DeviceError("[cpu] cannot allocate " + std::to_string(nbytes_) + " bytes: out of memory");
  }
  std::shared_ptr<HostBlocks> blocks_;
  BlockCache::Block block_;  // a mapped block; empty for malloc'd memory
  // Small Buffers (a reduction's result, a counter) live in the storage object itself: one
  // allocation instead of two. Aligned by hand to 64 bytes, as the larger ones are: an
  // over-aligned member would make every HostStorage a posix_memalign (slow in glibc).
  static constexpr std::size_t kInline = 64;
  void* inline_data() {
    const auto at = reinterpret_cast<std::uintptr_t>(inline_raw_);
    return reinterpret_cast<void*>((at + kInline - 1) & ~std::uintptr_t(kInline - 1));
  }
  unsigned char inline_raw_[2 * kInline - 1] = {};
};

// ---- device ----

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto p = line.find(':');
      if (p != std::string::npos) {
        auto name = line.substr(p + 1);
        name.erase(0, name.find_first_not_of(" \t"));
        return name;
      }
    }
  }
  return "";
}

const char* architecture() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "arm64";
#else
  return "unknown";
#endif
}

DeviceInfo make_info() {
  DeviceInfo info;
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  const std::string model = cpu_model_name();
  info.name = "CPU (" + (model.empty() ? std::string(architecture()) : model) + ", " + std::to_string(threads) + " threads)";
  info.backend = "cpu";
  info.index = 0;
  info.architecture = architecture();
  info.max_threads_per_threadgroup = 1024;  // as on Apple GPUs, so kernels stay portable
  info.simd_width = 32;
  info.unified_memory = true;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  info.memory_size = pages > 0 && page > 0 ? std::uint64_t(pages) * std::uint64_t(page) : 0;
  info.max_buffer_length = info.memory_size;
  info.threadgroup_memory_length = 32 * 1024;  // Apple GPUs' limit, so kernels stay portable
  return info;
}

struct RecordedCommands final : BackendGraph {
  explicit RecordedCommands(const std::vector<DispatchCommand>& list)
      : commands(std::make_shared<const std::vector<DispatchCommand>>(list)) {}
  std::shared_ptr<const std::vector<DispatchCommand>> commands;  // shared with replays in flight
};

class CpuDevice : public BackendDevice {
 public:
  explicit CpuDevice(const DeviceOptions& options)
      : info_(make_info()),
        checked_(options.checked),
        // Freed memory kept for reuse: an eighth of the system's, at most 4 GiB.
        blocks_(std::make_shared<HostBlocks>(std::min<std::size_t>(info_.memory_size / 8, std::size_t(4) << 30))),
        queue_(in_process_runner(), options.kernel_timeout) {
    if (checked_) info_.name += " [checked]";
    enable_stack_guard();  // a stack overflow in kernel code is an ExecutionError (stack_guard.hpp)
  }
  const DeviceInfo& info() const override { return info_; }
  std::shared_ptr<BufferStorage> allocate(std::size_t nbytes) override {
    return std::make_shared<HostStorage>(nbytes, true, blocks_);
  }
  std::shared_ptr<BufferStorage> allocate_uninitialized(std::size_t nbytes) override {
    return std::make_shared<HostStorage>(nbytes, false, blocks_);
  }
  std::size_t cached_bytes() override { return blocks_->cached_bytes(); }
  void empty_cache() override { blocks_->empty(); }
  void device_memory(std::size_t* free_bytes, std::size_t* total_bytes) override {
    const long available = sysconf(_SC_AVPHYS_PAGES);
    *total_bytes = info_.memory_size;
    *free_bytes = available > 0 ? static_cast<std::size_t>(available) * page_size() : 0;
  }
  std::string compiler_identity() override { return CpuCompiler::instance().identity(); }
  std::shared_ptr<BackendLibrary> compile(const std::string& source, const CompileOptions& options) override {
    msl::FrontEndOptions front = cpu_front_end_options(options, checked_);
    const bool fast_math = options.fast_math;
    // A compile may run libclang (METALCALL_VERIFY=1), and code since the last compile may have
    // put a SIGSEGV handler ahead of the stack guard's: the guard first again.
    struct GuardFirst {
      ~GuardFirst() { keep_stack_guard_first(); }
    } guard_first;
    return translated::TranslatedLibrary<CpuModule>::compile(
        source, std::move(front),
        [fast_math, checked = checked_](const msl::Translation& translation, const std::string& user_source) {
          return std::make_shared<CpuModule>(CpuCompiler::instance().build(translation, user_source, fast_math, checked));
        },
        [checked = checked_](const msl::TranslatedKernel& kernel, const std::shared_ptr<CpuModule>& module) {
          return load_program(kernel, module, checked);
        });
  }
  void submit(std::vector<DispatchCommand>&& commands, const std::shared_ptr<CompletionState>& completion,
              bool caller_waits) override {
    queue_.submit(std::move(commands), completion, caller_waits);
  }
  void synchronize() override { queue_.synchronize(); }
  void stop_all(const char* reason) override {
    stop_all_kernels(reason);  // those running now (and later), with or without a Completion
    queue_.stop_all(reason);   // those queued
  }
  bool run_now(const DispatchCommand& command, double* seconds) override { return queue_.run_now(command, seconds); }
  // A recording replays its commands as they are, without copying them into each submission.
  std::shared_ptr<BackendGraph> make_graph(const std::vector<DispatchCommand>& commands) override {
    return std::make_shared<RecordedCommands>(commands);
  }
  void replay(const std::shared_ptr<BackendGraph>& graph, const std::shared_ptr<CompletionState>& completion) override {
    queue_.replay(static_cast<const RecordedCommands&>(*graph).commands, completion);
  }

 private:
  DeviceInfo info_;
  bool checked_;
  std::shared_ptr<HostBlocks> blocks_;  // shared with the storages, which may outlive the device
  CpuQueue queue_;
};

}  // namespace
}  // namespace metalcall::cpu

namespace metalcall {

void register_cpu_backend() {
  BackendEntry entry;
  entry.name = "cpu";
  entry.priority = 0;
  entry.enumerate = [] { return std::vector<DeviceInfo>{cpu::make_info()}; };
  entry.unavailable_reason = [] { return std::string(); };
  entry.open = [](int, const DeviceOptions& options) -> std::shared_ptr<BackendDevice> {
    if (options.sandbox == SandboxMode::on) return cpu::open_sandbox_device(options, cpu::make_info());
    return std::make_shared<cpu::CpuDevice>(options);
  };
  entry.sandbox_available = cpu::sandbox_supported;
  register_backend(std::move(entry));
}

}  // namespace metalcall
