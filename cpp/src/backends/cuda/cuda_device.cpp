// The CUDA backend (DESIGN.md §3 "CUDA execution"): MSL translated to CUDA C++,
// compiled by NVRTC to a cubin, run through the driver API. libcuda and NVRTC are
// loaded at run time (cuda_api.cpp); without them the backend lists no device.
//
// Memory: managed allocations (the host view of a Buffer is real memory), never
// larger than the device's free memory. Foreign host memory (NumPy arrays) is
// staged through device memory around the call (the caller waits for such calls).
// Launches: one stream per device; a completer thread waits on each submission's
// end event and finishes its completion with the GPU time between two events.
// Partial threadgroups: a kernel with barriers or SIMD-group functions is launched
// so that every block is exactly one threadgroup (the partial edge groups are
// separate launches with smaller blocks): MSL says threads outside the grid do not
// exist, and barriers and SIMD lanes must see exactly the group's threads. Other
// kernels are one launch whose out-of-grid threads return at once.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <cctype>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include "backends/cpu/embedded_prelude.hpp"
#include "backends/cpu/host_compiler.hpp"
#include "backends/cuda/cuda_api.hpp"
#include "core/backend.hpp"
#include "core/disk_cache.hpp"
#include "core/hash.hpp"
#include "core/registry.hpp"
#include "core/scalar_packing.hpp"
#include "metalcall/errors.hpp"
#include "msl/cuda_abi.hpp"
#include "msl/signature_parser.hpp"
#include "msl/diagnostics.hpp"
#include "msl/translated_library.hpp"
#include "msl/translator.hpp"
#include "msl/type_names.hpp"

namespace metalcall::cuda {

namespace {

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

bool file_exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string parent(const std::string& path) {
  auto p = path.rfind('/');
  return p == std::string::npos ? std::string(".") : path.substr(0, p);
}

// ---- device properties ----

struct DeviceProps {
  DeviceInfo info;
  CUdevice device = 0;
  int cc_major = 0, cc_minor = 0;
  unsigned max_block[3] = {1024, 1024, 64};
  unsigned max_grid[3] = {2147483647u, 65535u, 65535u};
  std::size_t smem_optin = 48 * 1024;
};

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
  static std::string why;
  static const std::vector<DeviceProps> all = [] {
    try {
      return query_devices(&why);
    } catch (const std::exception& e) {
      why = e.what();
      return std::vector<DeviceProps>{};
    }
  }();
  if (problem) *problem = why;
  return all;
}

// ---- memory ----

class ManagedStorage : public BufferStorage {
 public:
  ManagedStorage(CUcontext ctx, std::size_t nbytes) : BufferStorage(nullptr, nbytes), ctx_(ctx) {
    make_current(ctx_);
    std::size_t free_bytes = 0, total_bytes = 0;
    check(api().cuMemGetInfo(&free_bytes, &total_bytes), "cuMemGetInfo");
    // Managed memory beyond what the GPU has free can hang the device: refuse it.
    constexpr std::size_t kReserve = 256ull << 20;
    const std::size_t usable = free_bytes > kReserve ? free_bytes - kReserve : 0;
    if (nbytes > usable) {
      throw DeviceError("[cuda] cannot allocate " + std::to_string(nbytes) + " bytes: the GPU has " +
                        std::to_string(free_bytes) + " bytes free (of " + std::to_string(total_bytes) + ")");
    }
    const CUresult r = api().cuMemAllocManaged(&ptr_, std::max<std::size_t>(nbytes, 16), CU_MEM_ATTACH_GLOBAL);
    if (r != CUDA_SUCCESS) throw DeviceError("[cuda] cannot allocate " + std::to_string(nbytes) + " bytes: " + describe(r));
    data_ = reinterpret_cast<void*>(ptr_);
    std::memset(data_, 0, std::max<std::size_t>(nbytes, 16));  // new buffers read as zeros, as on the CPU
  }
  ~ManagedStorage() override {
    try {
      make_current(ctx_);
      api().cuMemFree(ptr_);
    } catch (...) {
    }
  }

 private:
  CUcontext ctx_;
  CUdeviceptr ptr_ = 0;
};

// ---- compiler ----

using msl::Diagnostic;
using msl::is_user_file;

// "file(line): error: message" (no regex: libstdc++'s recurses per character and
// overflows the stack on NVRTC's long lines).
bool parse_head(const std::string& l, Diagnostic& d) {
  for (const char* severity : {"): catastrophic error: ", "): error: ", "): warning: ", "): remark: "}) {
    const std::size_t p = l.find(severity);
    if (p == std::string::npos) continue;
    const std::size_t open = l.rfind('(', p);
    if (open == std::string::npos || open + 1 >= p || p - open > 10) continue;
    const std::string digits = l.substr(open + 1, p - open - 1);
    if (digits.find_first_not_of("0123456789") != std::string::npos) continue;
    d.file = l.substr(0, open);
    d.line = std::stoi(digits);
    d.error = std::strstr(severity, "error") != nullptr;
    d.message = l.substr(p + std::strlen(severity));
    return true;
  }
  return false;
}

// "... at line N of file" (template instantiation context).
bool parse_context(const std::string& l, Diagnostic& d) {
  const std::size_t p = l.rfind("at line ");
  if (p == std::string::npos) return false;
  std::size_t q = p + 8, e = q;
  while (e < l.size() && std::isdigit(static_cast<unsigned char>(l[e]))) ++e;
  if (e == q || l.compare(e, 4, " of ") != 0) return false;
  d.line = std::stoi(l.substr(q, e - q));
  d.file = l.substr(e + 4);
  while (!d.file.empty() && (d.file.back() == ' ' || d.file.back() == '\r')) d.file.pop_back();
  return true;
}

CompileError nvrtc_error(const std::string& raw_log, const msl::SourceMap& map, const std::string& source) {
  // Columns come from the raw log (the caret sits under NVRTC's own spelling of the
  // line, which it indents by two spaces); messages get the user's type names back.
  std::vector<std::string> lines;
  {
    std::istringstream in(raw_log);
    std::string l;
    while (std::getline(in, l)) lines.push_back(l);
  }
  std::vector<Diagnostic> diags;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    Diagnostic d;
    if (parse_head(lines[i], d)) {
      d.message = msl::restore_type_names(d.message);
      if (i + 2 < lines.size() && lines[i + 2].find('^') != std::string::npos &&
          lines[i + 2].find_first_not_of(" ^") == std::string::npos) {
        const int caret = static_cast<int>(lines[i + 2].find('^'));
        d.column = caret >= 2 ? caret - 1 : 1;
      }
      diags.push_back(d);
    } else if (!diags.empty() && parse_context(lines[i], d) && is_user_file(d.file)) {
      diags.push_back(d);
    }
  }
  // The log as compilers usually print it (file:line:column), then NVRTC's own.
  std::string log;
  for (const auto& d : diags) {
    if (!is_user_file(d.file) || d.message.empty()) continue;
    const int column = d.column ? map.user_column(d.line, d.column) : 1;
    log += std::string(msl::kSourceName) + ":" + std::to_string(d.line) + ":" + std::to_string(column) +
           (d.error ? ": error: " : ": warning: ") + d.message + "\n";
  }
  log += msl::restore_type_names(raw_log);
  std::string what_failed = "[cuda] the kernel did not compile";
  if (log.find("cuda_fp16.h") != std::string::npos) {
    what_failed += " (NVRTC needs the CUDA headers for half: install the CUDA toolkit or the nvidia-cuda-runtime "
                   "wheel, or set CUDA_PATH)";
  }
  return msl::compile_error(diags, &map, source, log, what_failed);
}

class Nvrtc {
 public:
  static Nvrtc& instance() {
    static Nvrtc* n = new Nvrtc();
    return *n;
  }
  std::string identity(const std::string& arch) const {
    return "nvrtc " + std::to_string(api().nvrtc_major) + "." + std::to_string(api().nvrtc_minor) + " | " + arch +
           " | translator " + std::to_string(msl::kTranslatorVersion) + " | cuda-abi 1";
  }

  /** The cubin for `tr`, from the disk cache when it is there. Throws CompileError. */
  std::string build(const msl::Translation& tr, const std::string& source, bool fast_math, const std::string& arch) {
    std::vector<std::string> options = {"-default-device", "--std=c++17", "-arch=" + arch,
                                        "-diag-suppress=1097,177,550,186", fast_math ? "--fmad=true" : "--fmad=false"};
    for (const auto& dir : include_dirs_) options.push_back("-I" + dir);
    ContentHash key_hash;
    key_hash.add(identity(arch)).add(tr.code);
    for (const auto& o : options) key_hash.add(o);
    for (std::size_t i = 0; i < cpu::kEmbeddedPreludeCount; ++i) key_hash.add(cpu::kEmbeddedPrelude[i].text);
    const std::string key = key_hash.hex();
    DiskCache cache("cuda");
    if (auto hit = cache.find(key, ".cubin")) {
      if (auto bytes = read_file(*hit)) return *bytes;
    }
    if (const char* dump = std::getenv("METALCALL_CUDA_DUMP_DIR")) {
      // Debugging aid: the CUDA C++ handed to NVRTC.
      if (*dump) write_file_atomic(std::string(dump) + "/" + key + ".cu", tr.code);
    }
    std::vector<const char*> names, texts;
    for (std::size_t i = 0; i < cpu::kEmbeddedPreludeCount; ++i) {
      names.push_back(cpu::kEmbeddedPrelude[i].name);
      texts.push_back(cpu::kEmbeddedPrelude[i].text);
    }
    const Api& a = api();
    nvrtcProgram prog = nullptr;
    nvrtcResult r = a.nvrtcCreateProgram(&prog, tr.code.c_str(), "metalcall_kernel.cu", static_cast<int>(names.size()),
                                         texts.data(), names.data());
    if (r != 0) throw DeviceError(std::string("[cuda] nvrtcCreateProgram failed: ") + a.nvrtcGetErrorString(r));
    std::vector<const char*> argv;
    for (const auto& o : options) argv.push_back(o.c_str());
    r = a.nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
    std::size_t log_size = 0;
    a.nvrtcGetProgramLogSize(prog, &log_size);
    std::string log(log_size, '\0');
    if (log_size) a.nvrtcGetProgramLog(prog, &log[0]);
    while (!log.empty() && log.back() == '\0') log.pop_back();
    if (r != 0) {
      a.nvrtcDestroyProgram(&prog);
      if (std::getenv("METALCALL_CUDA_DUMP")) std::fprintf(stderr, "%s\n----\n%s\n", tr.code.c_str(), log.c_str());
      throw nvrtc_error(log, tr.map, source);
    }
    std::size_t size = 0;
    a.nvrtcGetCUBINSize(prog, &size);
    std::string cubin(size, '\0');
    if (size) a.nvrtcGetCUBIN(prog, &cubin[0]);
    a.nvrtcDestroyProgram(&prog);
    if (size == 0) throw DeviceError("[cuda] NVRTC produced no cubin for " + arch);
    static std::atomic<unsigned> builds{0};
    const std::string temp = cache.scratch() + "/" + key + "." + std::to_string(getpid()) + "." +
                             std::to_string(builds.fetch_add(1)) + ".cubin";
    if (write_file_atomic(temp, cubin) && !cache.store(key, ".cubin", temp)) std::remove(temp.c_str());
    return cubin;
  }

 private:
  Nvrtc() {
    // cuda_fp16.h (half) comes from the CUDA headers: next to NVRTC (toolkit or wheel) or the usual places.
    std::vector<std::string> candidates;
    const std::string lib = parent(api().nvrtc_path);
    candidates.push_back(parent(lib) + "/include");
    for (const char* var : {"CUDA_PATH", "CUDA_HOME", "CUDA_ROOT"}) {
      const char* v = std::getenv(var);
      if (v && *v) candidates.push_back(std::string(v) + "/include");
    }
    candidates.push_back("/usr/local/cuda/include");
    candidates.push_back("/usr/local/cuda/targets/x86_64-linux/include");
    candidates.push_back(parent(parent(lib)) + "/cuda_runtime/include");
    candidates.push_back(parent(parent(lib)) + "/cu13/include");
    for (const auto& c : candidates) {
      if (file_exists(c + "/cuda_fp16.h")) {
        include_dirs_.push_back(c);
        break;
      }
    }
  }
  std::vector<std::string> include_dirs_;
};

// ---- modules and programs ----

class CudaModule {
 public:
  CudaModule(CUcontext ctx, const std::string& cubin) : ctx_(ctx) {
    make_current(ctx_);
    check(api().cuModuleLoadData(&module_, cubin.data()), "loading the compiled kernel (cuModuleLoadData)");
  }
  ~CudaModule() {
    try {
      make_current(ctx_);
      api().cuModuleUnload(module_);
    } catch (...) {
    }
  }
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;
  CUmodule handle() const { return module_; }

 private:
  CUcontext ctx_;
  CUmodule module_ = nullptr;
};

class CudaProgram : public Program {
 public:
  CudaProgram(KernelInfo info, std::shared_ptr<CudaModule> module, CUfunction fn, bool exact, std::size_t static_smem)
      : Program(std::move(info)), module_(std::move(module)), fn_(fn), exact_(exact), static_smem_(static_smem) {}
  CUfunction function() const { return fn_; }
  bool exact() const { return exact_; }
  std::size_t static_smem() const { return static_smem_; }

 private:
  std::shared_ptr<CudaModule> module_;
  CUfunction fn_;
  bool exact_;
  std::size_t static_smem_;
};

class CudaLibrary : public msl::TranslatedLibrary<CudaModule> {
 public:
  CudaLibrary(CUcontext ctx, const DeviceProps& props, std::string source, std::string preprocessed,
              CompileOptions options, msl::Translation base, std::shared_ptr<CudaModule> module,
              std::exception_ptr base_error)
      : TranslatedLibrary(std::move(source), std::move(preprocessed), std::move(options), std::move(base),
                          std::move(module), base_error),
        ctx_(ctx), props_(props) {}

  std::shared_ptr<Program> make_program(const std::string& name, const std::vector<FunctionConstant>& constants) override {
    const msl::TranslatedKernel* found = &kernel(name);
    auto module = module_for(constants);
    make_current(ctx_);
    const Api& a = api();
    CUfunction fn = nullptr;
    check(a.cuModuleGetFunction(&fn, module->handle(), found->entry_symbol.c_str()), "finding kernel '" + name + "'");
    KernelInfo info = found->info;
    std::vector<metalcall_cuda_layout> layout(info.params.size() + 1);
    CUdeviceptr table = 0;
    std::size_t table_bytes = 0;
    check(a.cuModuleGetGlobal(&table, &table_bytes, module->handle(), found->layout_symbol.c_str()),
          "finding the layout of kernel '" + name + "'");
    check(a.cuMemcpyDtoH(layout.data(), table, std::min(table_bytes, layout.size() * sizeof(metalcall_cuda_layout))),
          "reading the layout of kernel '" + name + "'");
    msl::apply_layout(info, layout.data());
    int max_threads = 0, static_smem = 0;
    a.cuFuncGetAttribute(&max_threads, FUNC_MAX_THREADS_PER_BLOCK, fn);
    a.cuFuncGetAttribute(&static_smem, FUNC_SHARED_SIZE_BYTES, fn);
    // Dynamic shared memory ([[threadgroup(i)]]) up to the device's opt-in limit.
    const int dynamic_limit = static_cast<int>(props_.smem_optin) - static_smem;
    if (dynamic_limit > 48 * 1024) a.cuFuncSetAttribute(fn, FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES, dynamic_limit);
    unsigned limit = props_.info.max_threads_per_threadgroup;
    if (max_threads > 0) limit = std::min(limit, static_cast<unsigned>(max_threads));
    if (info.declared_max_threads) limit = std::min(limit, info.declared_max_threads);
    info.max_total_threads_per_threadgroup = limit;
    return std::make_shared<CudaProgram>(std::move(info), module, fn, found->uses_fibers,
                                         static_cast<std::size_t>(std::max(0, static_smem)));
  }

 private:
  std::shared_ptr<CudaModule> build(msl::TranslateOptions& translate) override {
    msl::Translation specialised = msl::translate_for_cuda(source(), translate);
    const std::string cubin =
        Nvrtc::instance().build(specialised, source(), options().fast_math, props_.info.architecture);
    return std::make_shared<CudaModule>(ctx_, cubin);
  }

  CUcontext ctx_;
  const DeviceProps& props_;
};

// ---- queue ----

/** Device memory that stages foreign host memory for one call. */
struct Staging {
  CUdeviceptr ptr = 0;
  std::size_t bytes = 0;
};

struct Submission {
  CUevent start = nullptr, end = nullptr;
  std::shared_ptr<CompletionState> completion;
  std::vector<DispatchCommand> commands;  // keeps programs and buffers alive until done
  std::vector<Staging> staging;
};

class CudaQueue {
 public:
  CudaQueue(CUcontext ctx, const DeviceProps& props) : ctx_(ctx), props_(props) {
    make_current(ctx_);
    check(api().cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  }

  void submit(std::vector<DispatchCommand>&& commands, const std::shared_ptr<CompletionState>& completion,
              bool caller_waits) {
    Submission s;
    s.completion = completion;
    {
      std::lock_guard<std::mutex> lock(launch_mutex_);
      make_current(ctx_);
      s.start = take_event();
      s.end = take_event();
      try {
        check(api().cuEventRecord(s.start, stream_), "cuEventRecord");
        for (const auto& c : commands) enqueue(c, s.staging);
        check(api().cuEventRecord(s.end, stream_), "cuEventRecord");
      } catch (...) {
        // What was enqueued still runs: wait for it before the staging memory goes.
        api().cuStreamSynchronize(stream_);
        release(s);
        throw;
      }
      s.commands = std::move(commands);
      if (!caller_waits) {
        std::lock_guard<std::mutex> q(queue_mutex_);
        pending_.push_back(std::move(s));
        ++outstanding_;
        if (!completer_started_) {
          completer_started_ = true;
          std::thread([this] { completer_loop(); }).detach();  // the device lives for the process
        }
        queue_cv_.notify_all();
        return;
      }
    }
    finish(s);
  }

  // A small call on an idle queue: launch and wait on this thread, skipping the
  // completer thread's two hand-offs (the call is over in microseconds anyway).
  bool run_now(const DispatchCommand& command, double* seconds) {
    if (command.uses_host_memory()) return false;  // staging and copy-back go through submit()
    if (std::uint64_t(command.grid[0]) * command.grid[1] * command.grid[2] > (1u << 16)) return false;
    {
      std::lock_guard<std::mutex> q(queue_mutex_);
      if (outstanding_ != 0) return false;
    }
    Submission s;
    {
      std::lock_guard<std::mutex> lock(launch_mutex_);
      make_current(ctx_);
      s.start = take_event();
      s.end = take_event();
      try {
        check(api().cuEventRecord(s.start, stream_), "cuEventRecord");
        enqueue(command, s.staging);
        check(api().cuEventRecord(s.end, stream_), "cuEventRecord");
      } catch (...) {
        api().cuStreamSynchronize(stream_);
        release(s);
        throw;
      }
    }
    std::exception_ptr error = wait_for(s, seconds);
    release(s);
    if (error) std::rethrow_exception(error);
    return true;
  }

  void synchronize() {
    make_current(ctx_);
    const CUresult r = api().cuStreamSynchronize(stream_);
    std::unique_lock<std::mutex> lock(queue_mutex_);
    idle_cv_.wait(lock, [&] { return outstanding_ == 0; });
    if (r != CUDA_SUCCESS) throw ExecutionError("[cuda] the GPU reported an error: " + describe(r));
  }

 private:
  CUevent take_event() {
    {
      std::lock_guard<std::mutex> lock(events_mutex_);
      if (!events_.empty()) {
        CUevent e = events_.back();
        events_.pop_back();
        return e;
      }
    }
    CUevent e = nullptr;
    check(api().cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
    return e;
  }

  void release(Submission& s) {
    {
      std::lock_guard<std::mutex> lock(events_mutex_);
      for (CUevent e : {s.start, s.end})
        if (e) events_.push_back(e);
      for (const auto& st : s.staging) staging_pool_.emplace(st.bytes, st.ptr);
      // Keep the pool small: large stagings are freed.
      while (staging_pool_.size() > 8) {
        auto last = std::prev(staging_pool_.end());
        api().cuMemFree(last->second);
        staging_pool_.erase(last);
      }
    }
    s.start = s.end = nullptr;
    s.staging.clear();
  }

  Staging take_staging(std::size_t bytes) {
    bytes = std::max<std::size_t>(bytes, 16);
    {
      std::lock_guard<std::mutex> lock(events_mutex_);
      auto it = staging_pool_.lower_bound(bytes);
      if (it != staging_pool_.end() && it->first <= bytes * 2) {
        Staging s{it->second, it->first};
        staging_pool_.erase(it);
        return s;
      }
    }
    Staging s;
    s.bytes = bytes;
    const CUresult r = api().cuMemAlloc(&s.ptr, bytes);
    if (r != CUDA_SUCCESS) {
      throw DeviceError("[cuda] cannot stage " + std::to_string(bytes) + " bytes of host memory on the GPU: " +
                        describe(r) + "; pass a metalcall Buffer instead");
    }
    return s;
  }

  // Waits for a submission's end event; its GPU time in *seconds, or the error.
  std::exception_ptr wait_for(Submission& s, double* seconds) {
    make_current(ctx_);
    const Api& a = api();
    *seconds = 0;
    const CUresult r = a.cuEventSynchronize(s.end);
    if (r != CUDA_SUCCESS) {
      return std::make_exception_ptr(ExecutionError(
          "[cuda] the kernel failed on the GPU: " + describe(r) +
          " (a fault such as an out-of-bounds access leaves the CUDA context unusable: restart the process; "
          "Device(\"cpu\", checked=True) finds the faulting access)"));
    }
    float ms = 0;
    if (a.cuEventElapsedTime(&ms, s.start, s.end) == CUDA_SUCCESS) *seconds = ms / 1000.0;
    return nullptr;
  }

  void finish(Submission& s) {
    double seconds = 0;
    std::exception_ptr error = wait_for(s, &seconds);
    release(s);
    s.commands.clear();  // release programs and buffers before signalling
    s.completion->finish(error, seconds);
  }

  void completer_loop() {
    for (;;) {
      Submission s;
      {
        std::unique_lock<std::mutex> lock(queue_mutex_);
        queue_cv_.wait(lock, [&] { return !pending_.empty(); });
        s = std::move(pending_.front());
        pending_.pop_front();
      }
      try {
        finish(s);
      } catch (...) {
        if (!s.completion->done()) s.completion->finish(std::current_exception(), 0);
      }
      {
        std::lock_guard<std::mutex> lock(queue_mutex_);
        --outstanding_;
      }
      idle_cv_.notify_all();
    }
  }

  // Enqueues one dispatch (possibly several launches) on the stream.
  void enqueue(const DispatchCommand& command, std::vector<Staging>& staging) {
    const auto& program = static_cast<const CudaProgram&>(*command.program);
    const KernelInfo& k = program.info();
    const Api& a = api();
    for (int d = 0; d < 3; ++d)
      if (command.grid[d] == 0) return;
    if (command.args.size() > METALCALL_CUDA_MAX_ARGS) {
      throw ArgumentError("kernel '" + k.name + "' has " + std::to_string(command.args.size()) +
                          " parameters; the CUDA backend takes at most " + std::to_string(METALCALL_CUDA_MAX_ARGS));
    }
    for (int d = 0; d < 3; ++d) {
      if (command.threadgroup[d] > props_.max_block[d]) {
        static const char* axis = "xyz";
        throw ArgumentError("kernel '" + k.name + "': a threadgroup of " + std::to_string(command.threadgroup[d]) +
                            " threads along " + axis[d] + " exceeds this GPU's limit of " +
                            std::to_string(props_.max_block[d]) + " (CUDA blocks are at most 1024 x 1024 x 64)");
      }
    }
    metalcall_cuda_launch L;
    std::memset(&L, 0, offsetof(metalcall_cuda_launch, data));
    std::size_t used = 0, smem = 0;
    std::vector<std::pair<void*, Staging>> copy_back;
    for (std::size_t i = 0; i < command.args.size(); ++i) {
      const BoundArgument& arg = command.args[i];
      switch (arg.kind) {
        case ParamKind::builtin:
          break;
        case ParamKind::threadgroup_memory:
          smem = (smem + 15) & ~std::size_t(15);
          L.args[i] = reinterpret_cast<void*>(smem);
          L.arg_bytes[i] = arg.threadgroup_length;
          smem += arg.threadgroup_length;
          break;
        default:
          if (arg.buffer) {
            L.args[i] = arg.buffer->data();
            L.arg_bytes[i] = arg.buffer->nbytes();
          } else if (arg.host_data) {
            Staging st = take_staging(arg.host_nbytes);
            staging.push_back(st);
            if (arg.host_nbytes)
              check(a.cuMemcpyHtoDAsync(st.ptr, arg.host_data, arg.host_nbytes, stream_), "copying an argument to the GPU");
            L.args[i] = reinterpret_cast<void*>(st.ptr);
            L.arg_bytes[i] = arg.host_nbytes;
            if (arg.written && arg.host_nbytes) copy_back.emplace_back(arg.host_data, st);
          } else {
            used = (used + 15) & ~std::size_t(15);
            if (used + arg.bytes.size() > METALCALL_CUDA_INLINE_BYTES) {
              throw ArgumentError("kernel '" + k.name + "': the arguments passed by value take more than " +
                                  std::to_string(METALCALL_CUDA_INLINE_BYTES) +
                                  " bytes on the CUDA backend; pass large structs in a Buffer");
            }
            std::memcpy(L.data + used, arg.bytes.data(), arg.bytes.size());
            L.args[i] = reinterpret_cast<void*>(used);
            L.arg_bytes[i] = arg.bytes.size();
            L.inline_mask |= 1ull << i;
            used += arg.bytes.size();
          }
      }
    }
    if (smem + program.static_smem() > props_.smem_optin) {
      throw ArgumentError("kernel '" + k.name + "': " + std::to_string(smem) + " bytes of threadgroup memory plus the " +
                          std::to_string(program.static_smem()) + " bytes the kernel declares exceed the " +
                          std::to_string(props_.smem_optin) + " bytes a block may have on " + props_.info.name);
    }
    // Launch segments per dimension: (first group, group count, block size).
    struct Segment {
      unsigned origin, count, block;
    };
    std::vector<Segment> segments[3];
    for (int d = 0; d < 3; ++d) {
      const unsigned grid = command.grid[d], tg = command.threadgroup[d];
      L.grid[d] = grid;
      L.group[d] = tg;
      L.groups[d] = static_cast<unsigned>((std::uint64_t(grid) + tg - 1) / tg);
      const unsigned whole = program.exact() ? grid / tg : L.groups[d];
      for (unsigned o = 0; o < whole;) {
        const unsigned n = std::min<unsigned>(whole - o, props_.max_grid[d]);
        segments[d].push_back({o, n, tg});
        o += n;
      }
      if (program.exact() && grid % tg) segments[d].push_back({whole, 1, grid % tg});
    }
    void* params[] = {&L};
    for (const auto& sx : segments[0])
      for (const auto& sy : segments[1])
        for (const auto& sz : segments[2]) {
          L.origin[0] = sx.origin;
          L.origin[1] = sy.origin;
          L.origin[2] = sz.origin;
          const CUresult r = a.cuLaunchKernel(program.function(), sx.count, sy.count, sz.count, sx.block, sy.block,
                                              sz.block, static_cast<unsigned>(smem), stream_, params, nullptr);
          if (r != CUDA_SUCCESS) {
            throw ExecutionError("[cuda] launching kernel '" + k.name + "' (" + std::to_string(sx.count) + "x" +
                                 std::to_string(sy.count) + "x" + std::to_string(sz.count) + " blocks of " +
                                 std::to_string(sx.block) + "x" + std::to_string(sy.block) + "x" +
                                 std::to_string(sz.block) + ", " + std::to_string(smem) +
                                 " bytes of shared memory) failed: " + describe(r));
          }
        }
    for (const auto& [host, st] : copy_back) {
      std::size_t n = 0;
      for (const auto& arg : command.args)
        if (arg.host_data == host) n = arg.host_nbytes;
      check(a.cuMemcpyDtoHAsync(host, st.ptr, n, stream_), "copying a result back from the GPU");
    }
  }

  CUcontext ctx_;
  const DeviceProps& props_;
  CUstream stream_ = nullptr;
  std::mutex launch_mutex_;  // launches in submission order
  std::mutex events_mutex_;
  std::vector<CUevent> events_;
  std::multimap<std::size_t, CUdeviceptr> staging_pool_;
  std::mutex queue_mutex_;
  std::condition_variable queue_cv_, idle_cv_;
  std::deque<Submission> pending_;
  std::size_t outstanding_ = 0;
  bool completer_started_ = false;
};

// ---- device ----

class CudaDevice : public BackendDevice {
 public:
  explicit CudaDevice(const DeviceProps& props) : props_(props) {
    check(api().cuDevicePrimaryCtxRetain(&ctx_, props_.device), "cuDevicePrimaryCtxRetain");
    queue_ = std::make_unique<CudaQueue>(ctx_, props_);
  }
  const DeviceInfo& info() const override { return props_.info; }
  std::shared_ptr<BufferStorage> allocate(std::size_t nbytes) override {
    return std::make_shared<ManagedStorage>(ctx_, nbytes);
  }
  std::string compiler_identity() override { return Nvrtc::instance().identity(props_.info.architecture); }
  std::shared_ptr<BackendLibrary> compile(const std::string& source, const CompileOptions& options) override {
    msl::TranslateOptions translate;
    std::string preprocessed;
    if (cpu::HostCompiler::needs_preprocessing(source, options.defines)) {
      auto& host = cpu::HostCompiler::instance();
      if (!host.available()) {
        throw DeviceError("[cuda] this source uses the preprocessor (#define, #if or defines=), which needs a host "
                          "C++ compiler: " + host.unavailable_reason());
      }
      preprocessed = host.preprocess(source, options.defines);
      translate.preprocessed = &preprocessed;
    }
    msl::Translation translation = msl::translate_for_cuda(source, translate);
    std::shared_ptr<CudaModule> module;
    std::exception_ptr error;
    try {
      const std::string cubin = Nvrtc::instance().build(translation, source, options.fast_math, props_.info.architecture);
      module = std::make_shared<CudaModule>(ctx_, cubin);
    } catch (const CompileError&) {
      if (translation.function_constants.empty()) throw;
      error = std::current_exception();
    }
    return std::make_shared<CudaLibrary>(ctx_, props_, source, std::move(preprocessed), options, std::move(translation),
                                         module, error);
  }
  void submit(std::vector<DispatchCommand>&& commands, const std::shared_ptr<CompletionState>& completion,
              bool caller_waits) override {
    queue_->submit(std::move(commands), completion, caller_waits);
  }
  void synchronize() override { queue_->synchronize(); }
  bool run_now(const DispatchCommand& command, double* seconds) override { return queue_->run_now(command, seconds); }

 private:
  const DeviceProps& props_;
  CUcontext ctx_ = nullptr;
  std::unique_ptr<CudaQueue> queue_;
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
  entry.open = [](int index, const DeviceOptions&) -> std::shared_ptr<BackendDevice> {
    const auto& all = cuda::devices();
    if (index < 0 || index >= static_cast<int>(all.size())) throw DeviceError("[cuda] no CUDA device " + std::to_string(index));
    return std::make_shared<cuda::CudaDevice>(all[index]);
  };
  register_backend(std::move(entry));
}

}  // namespace metalcall
