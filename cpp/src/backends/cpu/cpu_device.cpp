// The CPU backend: MSL translated to C++, built by the system compiler, run on a
// worker pool. Always available.
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fstream>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#include <unordered_map>

#include "backends/cpu/cpu_program.hpp"
#include "backends/cpu/cpu_queue.hpp"
#include "backends/cpu/host_compiler.hpp"
#include "core/backend.hpp"
#include "core/registry.hpp"
#include "metalcall/errors.hpp"
#include "msl/translator.hpp"

namespace metalcall::cpu {

// ---- CpuModule ----

CpuModule::CpuModule(const std::string& path) : handle_(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
  if (!handle_) {
    const char* why = dlerror();
    throw DeviceError("[cpu] cannot load the compiled kernel " + path + ": " + (why ? why : "unknown error"));
  }
}

CpuModule::~CpuModule() { dlclose(handle_); }

void* CpuModule::symbol(const std::string& name) const { return dlsym(handle_, name.c_str()); }

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

// ---- library ----

class CpuLibrary : public BackendLibrary {
 public:
  CpuLibrary(std::shared_ptr<CpuModule> module, std::vector<msl::TranslatedKernel> kernels)
      : module_(std::move(module)), kernels_(std::move(kernels)) {}

  std::vector<std::string> function_names() const override {
    std::vector<std::string> names;
    for (const auto& k : kernels_) names.push_back(k.info.name);
    return names;
  }

  std::shared_ptr<Program> make_program(const std::string& name, const std::vector<FunctionConstant>& constants) override {
    const msl::TranslatedKernel* found = nullptr;
    for (const auto& k : kernels_)
      if (k.info.name == name) found = &k;
    if (!found) {
      std::string names;
      for (const auto& k : kernels_) names += (names.empty() ? "" : ", ") + k.info.name;
      throw ArgumentError("no kernel named '" + name + "' in this library; it has: " + (names.empty() ? "(none)" : names));
    }
    if (!constants.empty()) {
      throw ArgumentError("kernel '" + name + "' declares no [[function_constant]] values, but constants were given");
    }
    KernelInfo info = found->info;
    auto* layout = static_cast<const metalcall_cpu_layout*>(module_->symbol(found->layout_symbol));
    auto entry = reinterpret_cast<metalcall_cpu_entry>(module_->symbol(found->entry_symbol));
    if (!layout || !entry) throw DeviceError("[cpu] the compiled kernel '" + name + "' lacks its entry point");
    for (std::size_t i = 0; i < info.params.size(); ++i) {
      info.params[i].element_size = layout[i].size;
      info.params[i].element_align = layout[i].align;
    }
    info.max_total_threads_per_threadgroup = info.declared_max_threads ? info.declared_max_threads : 1024;
    return std::make_shared<CpuProgram>(std::move(info), module_, entry);
  }

 private:
  std::shared_ptr<CpuModule> module_;
  std::vector<msl::TranslatedKernel> kernels_;
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
  explicit CpuDevice(const DeviceOptions& options) : info_(make_info()) {
    if (options.checked) {
      throw DeviceError("[cpu] checked mode is not implemented yet; use Device(\"cpu\") without checked=True");
    }
  }
  const DeviceInfo& info() const override { return info_; }
  std::shared_ptr<BufferStorage> allocate(std::size_t nbytes) override { return std::make_shared<HostStorage>(nbytes); }
  std::string compiler_identity() override {
    auto& compiler = HostCompiler::instance();
    return compiler.available() ? compiler.identity() : "none";
  }
  std::shared_ptr<BackendLibrary> compile(const std::string& source, const CompileOptions& options) override {
    for (const auto& [name, value] : options.defines) check_define(name, value);
    msl::Translation translation = msl::translate_for_cpu(source, options.defines);
    const std::string path = HostCompiler::instance().build(translation, source, options.fast_math);
    return std::make_shared<CpuLibrary>(std::make_shared<CpuModule>(path), std::move(translation.kernels));
  }
  void submit(std::vector<DispatchCommand>&& commands, const std::shared_ptr<CompletionState>& completion,
              bool caller_waits) override {
    queue_.submit(std::move(commands), completion, caller_waits);
  }
  void synchronize() override { queue_.synchronize(); }

 private:
  static void check_define(const std::string& name, const std::string& value) {
    bool ok = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]));
    for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    if (!ok) throw ArgumentError("defines: '" + name + "' is not a valid macro name");
    if (value.find('\n') != std::string::npos) throw ArgumentError("defines: the value of '" + name + "' spans lines");
  }

  DeviceInfo info_;
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
    return std::make_shared<cpu::CpuDevice>(options);
  };
  register_backend(std::move(entry));
}

}  // namespace metalcall
