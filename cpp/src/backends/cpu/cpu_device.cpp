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
#include "backends/cpu/sandbox/sandbox_device.hpp"
#include "backends/translated/host_cxx.hpp"
#include "backends/translated/translated_library.hpp"
#include "core/backend.hpp"
#include "core/registry.hpp"
#include "metalcall/errors.hpp"

namespace metalcall::cpu {

namespace {

// ---- memory ----

// Large buffers come from mmap: page-aligned, zero-filled lazily by the kernel.
constexpr std::size_t kMmapThreshold = 1 << 20;

class HostStorage : public BufferStorage {
 public:
  explicit HostStorage(std::size_t nbytes) : BufferStorage(nullptr, nbytes) {
    if (nbytes == 0) {
      data_ = &empty_;
    } else if (nbytes >= kMmapThreshold) {
      void* p = mmap(nullptr, nbytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw_out_of_memory();
#ifdef MADV_HUGEPAGE
      // Huge pages: the first touch of a large buffer faults 512 times less often.
      madvise(p, nbytes, MADV_HUGEPAGE);
#endif
      data_ = p;
      mapped_ = true;
    } else {
      void* p = nullptr;
      if (posix_memalign(&p, 64, nbytes) != 0) throw_out_of_memory();
      std::memset(p, 0, nbytes);
      data_ = p;
    }
  }
  ~HostStorage() override {
    if (data_ == &empty_) return;
    if (mapped_) munmap(data_, nbytes_);
    else std::free(data_);
  }

 private:
  [[noreturn]] void throw_out_of_memory() const {
    throw DeviceError("[cpu] cannot allocate " + std::to_string(nbytes_) + " bytes: out of memory");
  }
  bool mapped_ = false;
  alignas(64) unsigned char empty_[16] = {};
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

class CpuDevice : public BackendDevice {
 public:
  explicit CpuDevice(const DeviceOptions& options)
      : info_(make_info()), checked_(options.checked), queue_(in_process_runner()) {
    if (checked_) info_.name += " [checked]";
  }
  const DeviceInfo& info() const override { return info_; }
  std::shared_ptr<BufferStorage> allocate(std::size_t nbytes) override { return std::make_shared<HostStorage>(nbytes); }
  std::string compiler_identity() override { return CpuCompiler::instance().identity(); }
  std::shared_ptr<BackendLibrary> compile(const std::string& source, const CompileOptions& options) override {
    msl::FrontEndOptions front;
    front.target = msl::Target::cpu;
    front.defines = options.defines;
    front.checked = checked_;
    front.preprocessor = translated::host_preprocessor("cpu");
    const bool fast_math = options.fast_math;
    return translated::TranslatedLibrary<CpuModule>::compile(
        source, std::move(front),
        [fast_math](const msl::Translation& translation, const std::string& user_source) {
          return std::make_shared<CpuModule>(CpuCompiler::instance().build(translation, user_source, fast_math));
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
  bool run_now(const DispatchCommand& command, double* seconds) override { return queue_.run_now(command, seconds); }

 private:
  DeviceInfo info_;
  bool checked_;
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
