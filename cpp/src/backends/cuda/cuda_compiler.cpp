// The CUDA backend's compiler (see cuda_compiler.hpp): NVRTC, its log mapped back to
// the user's source, and loading cubins.
#include "backends/cuda/cuda_compiler.hpp"

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include "backends/translated/embedded_prelude.hpp"
#include "backends/translated/prelude_parts.hpp"
#include "backends/translated/translated_library.hpp"
#include "core/disk_cache.hpp"
#include "core/hash.hpp"
#include "core/interrupt.hpp"
#include "metalcall/errors.hpp"
#include "msl/targets/cuda_abi.hpp"
#include "msl/errors/diagnostics.hpp"
#include "msl/parse/type_names.hpp"

namespace metalcall::cuda {

using translated::kEmbeddedPrelude;
using translated::kEmbeddedPreludeCount;

namespace {

bool file_exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string parent(const std::string& path) {
  auto p = path.rfind('/');
  return p == std::string::npos ? std::string(".") : path.substr(0, p);
}

// ---- NVRTC's log ----

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

}  // namespace

// ---- NVRTC ----

Nvrtc& Nvrtc::instance() {
  static Nvrtc* n = new Nvrtc();  // lives for the process
  return *n;
}

Nvrtc::Nvrtc() {
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

std::string Nvrtc::identity(const std::string& arch) const {
  return "nvrtc " + std::to_string(api().nvrtc_major) + "." + std::to_string(api().nvrtc_minor) + " | " + arch +
         " | translator " + std::to_string(msl::kTranslatorVersion) + " | cuda-abi 3 | prelude " +
         translated::embedded_prelude_hash();
}

namespace {

bool has_coarsened_entries(const msl::Translation& tr) {
  return tr.code.find(METALCALL_CUDA_COARSENED_GUARD) != std::string::npos;
}

// One NVRTC compile of `code` with the embedded prelude: the cubin, or an empty string and `log`.
std::string nvrtc_compile(const std::string& code, const std::vector<std::string>& options, std::string& log) {
  std::vector<const char*> names, texts;
  for (std::size_t i = 0; i < kEmbeddedPreludeCount; ++i) {
    names.push_back(kEmbeddedPrelude[i].name);
    texts.push_back(kEmbeddedPrelude[i].text);
  }
  const Api& a = api();
  nvrtcProgram prog = nullptr;
  nvrtcResult r = a.nvrtcCreateProgram(&prog, code.c_str(), "metalcall_kernel.cu", static_cast<int>(names.size()),
                                       texts.data(), names.data());
  if (r != 0) throw DeviceError(std::string("[cuda] nvrtcCreateProgram failed: ") + a.nvrtcGetErrorString(r));
  std::vector<const char*> argv;
  for (const auto& o : options) argv.push_back(o.c_str());
  r = a.nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  std::size_t log_size = 0;
  a.nvrtcGetProgramLogSize(prog, &log_size);
  log.assign(log_size, '\0');
  if (log_size) a.nvrtcGetProgramLog(prog, &log[0]);
  while (!log.empty() && log.back() == '\0') log.pop_back();
  std::string cubin;
  if (r == 0) {
    std::size_t size = 0;
    a.nvrtcGetCUBINSize(prog, &size);
    cubin.assign(size, '\0');
    if (size) a.nvrtcGetCUBIN(prog, &cubin[0]);
  }
  a.nvrtcDestroyProgram(&prog);
  return cubin;
}

}  // namespace

std::string Nvrtc::build(const msl::Translation& tr, const std::string& source, bool fast_math, const std::string& arch,
                         bool restrict_buffers, bool coarsened) {
  std::vector<std::string> options = {"-default-device", "--std=c++17", "-arch=" + arch,
                                      "-diag-suppress=1097,177,550,186", fast_math ? "--fmad=true" : "--fmad=false"};
  // The prelude's opt-in TF32 SIMD-group products need fast math (metal_simdgroup_matrix_cuda.h).
  if (fast_math) options.push_back("-DMETALCALL_FAST_MATH=1");
  if (!restrict_buffers) options.push_back(METALCALL_CUDA_NO_RESTRICT_OPTION);
  if (!coarsened && has_coarsened_entries(tr)) options.push_back(METALCALL_CUDA_NO_COARSENED_OPTION);
  for (const auto& dir : include_dirs_) options.push_back("-I" + dir);
  // The prelude parts the kernel spells (translated/prelude_parts.hpp); METALCALL_CUDA_PRELUDE=full:
  // the whole prelude, as before the parts (for comparisons).
  const auto begin = std::chrono::steady_clock::now();
  const char* whole = std::getenv("METALCALL_CUDA_PRELUDE");
  std::vector<std::string> parts;
  if (!(whole && std::string(whole) == "full")) parts = translated::prelude_part_options(tr.code);
  std::vector<std::string> with_parts = options;
  with_parts.insert(with_parts.end(), parts.begin(), parts.end());
  // NVRTC 12.4+'s -minimal leaves out of its own headers CUDA's texture objects, the device
  // runtime and launches from device code, none of which a translation uses (about 10% of a
  // small kernel's compile); the whole prelude's compile, the fallback, goes without it.
  const Api& a = api();
  if (!parts.empty() && (a.nvrtc_major > 12 || (a.nvrtc_major == 12 && a.nvrtc_minor >= 4)))
    with_parts.push_back("-minimal");
  const auto selected = std::chrono::steady_clock::now();
  ContentHash key_hash;
  key_hash.add(identity(arch)).add(tr.code);
  for (const auto& o : with_parts) key_hash.add(o);
  const std::string key = key_hash.hex();
  DiskCache cache("cuda");
  // A hit is checked (owner, header, name, checksum) and handed to cuModuleLoadData
  // from memory: no path is loaded, so nothing can be swapped in after the check.
  if (auto hit = cache.load_entry(key, ".cubin")) return *hit;
  if (const char* dump = std::getenv("METALCALL_CUDA_DUMP_DIR")) {
    // Debugging aid: the CUDA C++ handed to NVRTC, after its prelude parts.
    std::string head = "// prelude parts:";
    for (const auto& p : parts) head += " " + p;
    if (*dump) write_file_atomic(std::string(dump) + "/" + key + ".cu", head + "\n" + tr.code);
  }
  std::string log;
  const auto start = std::chrono::steady_clock::now();
  std::string cubin = nvrtc_compile(tr.code, with_parts, log);
  // A kernel the parts do not compile gets the whole prelude: a name the parts' tables miss
  // costs a second compile, never a different result; the user's own errors come from it too.
  const bool again = cubin.empty() && !parts.empty();
  if (again) cubin = nvrtc_compile(tr.code, options, log);
  if (std::getenv("METALCALL_COMPILE_TIMES")) {
    std::string which;
    for (std::size_t i = 1; i < parts.size(); ++i) {  // -DMETALCALL_PART_HALF=1 -> HALF
      const std::string part = parts[i].substr(std::strlen("-DMETALCALL_PART_"));
      which += " " + part.substr(0, part.find('='));
    }
    std::fprintf(stderr, "metalcall compile times: nvrtc %.2f ms, parts%s%s\n",
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(),
                 parts.empty() ? " (whole prelude)" : which.empty() ? " none" : which.c_str(),
                 again ? ", compiled again with the whole prelude" : "");
  }
  const auto compiled = std::chrono::steady_clock::now();
  if (cubin.empty()) {
    if (std::getenv("METALCALL_CUDA_DUMP")) std::fprintf(stderr, "%s\n----\n%s\n", tr.code.c_str(), log.c_str());
    if (log.empty()) throw DeviceError("[cuda] NVRTC produced no cubin for " + arch);
    throw nvrtc_error(log, tr.map, source);
  }
  cache.save_entry(key, ".cubin", cubin);
  if (std::getenv("METALCALL_COMPILE_TIMES")) {
    const auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
    std::fprintf(stderr, "metalcall compile times: select %.2f ms, cubin-cache %.2f ms\n", ms(selected - begin),
                 ms(start - selected) + ms(std::chrono::steady_clock::now() - compiled));
  }
  return cubin;
}

// ---- modules and programs ----

CudaModule::CudaModule(CUcontext ctx, const std::string& cubin, StopWord& stop,
                       const std::vector<msl::TranslatedKernel>& kernels)
    : ctx_(ctx) {
  const Api& a = api();
  const auto begin = std::chrono::steady_clock::now();
  make_current(ctx_);
  check(a.cuModuleLoadData(&module_, cubin.data()), "loading the compiled kernel (cuModuleLoadData)");
  try {
    stop.attach(module_);  // the loops' stop checks read the queue's word (cuda_stop.hpp)
    for (const msl::TranslatedKernel& k : kernels) {
      // A symbol the module lacks is reported on use; any other failure (out of memory, an earlier
      // fault of the context) is the driver's error, said now.
      CUfunction fn = nullptr;
      const CUresult found = a.cuModuleGetFunction(&fn, module_, k.entry_symbol.c_str());
      if (found == CUDA_ERROR_NOT_FOUND) continue;
      check(found, "finding kernel '" + k.info.name + "' in its module (cuModuleGetFunction)");
      if (a.cuFuncLoad) a.cuFuncLoad(fn);
      functions_[k.entry_symbol] = fn;
      CUdeviceptr table = 0;
      std::size_t table_bytes = 0;
      const CUresult global = a.cuModuleGetGlobal(&table, &table_bytes, module_, k.layout_symbol.c_str());
      if (global == CUDA_ERROR_NOT_FOUND) continue;
      check(global, "finding the layout of kernel '" + k.info.name + "' (cuModuleGetGlobal)");
      std::string bytes(table_bytes, '\0');
      stop.read(&bytes[0], table, table_bytes, "reading the layout of kernel '" + k.info.name + "'");
      layouts_[k.layout_symbol] = std::move(bytes);
    }
    if (std::getenv("METALCALL_COMPILE_TIMES")) {
      std::fprintf(stderr, "metalcall compile times: module-load %.2f ms\n",
                   std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count());
    }
  } catch (...) {
    a.cuModuleUnload(module_);
    throw;
  }
}

CUfunction CudaModule::function(const std::string& entry_symbol, const std::string& kernel_name) const {
  auto it = functions_.find(entry_symbol);
  if (it == functions_.end())
    throw DeviceError("[cuda] finding kernel '" + kernel_name + "': the compiled module lacks " + entry_symbol);
  return it->second;
}

const std::string& CudaModule::layout(const std::string& layout_symbol) const {
  static const std::string& none = *new std::string();  // never destroyed (exit-safe statics)
  auto it = layouts_.find(layout_symbol);
  return it == layouts_.end() ? none : it->second;
}
CudaModule::~CudaModule() {
  // The driver may wait for kernels of the module still running (behind one that never ends):
  // through the blocking-wait hook, so that a thread holding the GIL lets go of it meanwhile.
  run_blocking_wait(
      [](void* arg) {
        const CudaModule& m = *static_cast<const CudaModule*>(arg);
        try {
          make_current(m.ctx_);
          api().cuModuleUnload(m.module_);
        } catch (...) {
        }
      },
      this);
}

CudaModules::CudaModules(CUcontext ctx, StopWord& stop, const msl::Translation& translation,
                         const std::string& source, bool fast_math, const std::string& arch)
    : ctx_(ctx), stop_(stop), translation_(translation), source_(source), fast_math_(fast_math), arch_(arch) {
  restricted_ = std::make_shared<CudaModule>(ctx_, Nvrtc::instance().build(translation_, source_, fast_math_, arch_),
                                             stop_, translation_.kernels);
}

std::shared_ptr<CudaModule> CudaModules::plain() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!plain_) {
    plain_ = std::make_shared<CudaModule>(ctx_, Nvrtc::instance().build(translation_, source_, fast_math_, arch_,
                                                                        /*restrict_buffers=*/false),
                                          stop_, translation_.kernels);
  }
  return plain_;
}

std::shared_ptr<CudaModule> CudaModules::coarsened(bool overlapping) {
  if (!has_coarsened_entries(translation_)) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  std::shared_ptr<CudaModule>& module = coarsened_[overlapping ? 1 : 0];
  if (!module) {
    module = std::make_shared<CudaModule>(ctx_, Nvrtc::instance().build(translation_, source_, fast_math_, arch_,
                                                                        /*restrict_buffers=*/!overlapping,
                                                                        /*coarsened=*/true),
                                          stop_, translation_.kernels);
  }
  return module;
}

CUfunction CudaProgram::unrestricted_function() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!plain_fn_) {
    CUfunction fn = modules_->plain()->function(entry_symbol_, info().name);  // the build for overlapping buffers
    if (dynamic_smem_limit_ > 0) api().cuFuncSetAttribute(fn, FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES, dynamic_smem_limit_);
    plain_fn_ = fn;
  }
  return plain_fn_;
}

CUfunction CudaProgram::coarsened_function(bool overlapping) const {
  if (exact_) return nullptr;  // barriers or SIMD-group functions: never coarsenable
  std::lock_guard<std::mutex> lock(mutex_);
  bool& probed = overlapping ? plain_coarsened_probed_ : coarsened_probed_;
  CUfunction& fn = overlapping ? plain_coarsened_fn_ : coarsened_fn_;
  if (!probed) {
    probed = true;
    // The build with the coarsened entry points, made now (CudaModules), on a thread of its own:
    // this launch may be enqueued while its thread captures a graph (dev.record), where loading a
    // module (its layout tables' copies) is refused and would end the capture; the queue's stream
    // is a non-blocking one, which another thread's work does not touch. Should the build fail,
    // the launch takes the plain entry point, as for a kernel without one.
    std::shared_ptr<CudaModule> module;
    std::thread([&] {
      try {
        module = modules_->coarsened(overlapping);
      } catch (...) {
        module = nullptr;
      }
    }).join();
    const std::string symbol = msl::cuda_coarsened_symbol(entry_symbol_);
    // Only kernels the translator proved coarsenable have one; a missing symbol is no error.
    if (!module || api().cuModuleGetFunction(&fn, module->handle(), symbol.c_str()) != CUDA_SUCCESS) fn = nullptr;
    int max_threads = 0;
    if (fn && (api().cuFuncGetAttribute(&max_threads, FUNC_MAX_THREADS_PER_BLOCK, fn) != CUDA_SUCCESS ||
               max_threads < static_cast<int>(kCoarsenedBlock)))
      fn = nullptr;  // a launch of kCoarsenedBlock threads must fit (registers)
  }
  return fn;
}

namespace {

// The module's layout table must describe a block the fields fit in: a cheap guard
// against a translator and runtime that disagree.
void check_layout(const KernelInfo& info, const std::vector<metalcall_cuda_layout>& layout) {
  const std::size_t n = info.params.size();
  const unsigned long long total = layout[n].size;
  bool ok = total >= sizeof(metalcall_cuda_geometry) && total < (1u << 20);
  for (std::size_t i = 0; i < n && ok; ++i) {
    const metalcall_cuda_layout& l = layout[i];
    const unsigned long long value_bytes =
        info.params[i].kind == ParamKind::threadgroup_memory ? sizeof(unsigned long long) : l.size;
    if (l.value_offset >= 0)
      ok = static_cast<unsigned long long>(l.value_offset) >= sizeof(metalcall_cuda_geometry) &&
           l.value_offset + value_bytes <= total;
    if (ok && l.pointer_offset >= 0)
      ok = static_cast<unsigned long long>(l.pointer_offset) >= sizeof(metalcall_cuda_geometry) &&
           l.pointer_offset + sizeof(void*) <= total;
  }
  if (!ok) {
    throw DeviceError("[cuda] kernel '" + info.name + "': the parameter layout read back from the compiled module is "
                      "inconsistent (a translator/runtime mismatch); clear the kernel cache and report this");
  }
}

}  // namespace

std::shared_ptr<Program> load_program(const msl::TranslatedKernel& kernel, const std::shared_ptr<CudaModules>& modules,
                                      CUcontext ctx, const DeviceProps& props) {
  const std::shared_ptr<CudaModule>& module = modules->restricted();
  const msl::TranslatedKernel* found = &kernel;
  const std::string& name = kernel.info.name;
  make_current(ctx);
  const Api& a = api();
  // Loaded with the module: nothing here waits for the GPU (CudaModule).
  CUfunction fn = module->function(found->entry_symbol, name);
  KernelInfo info = found->info;
  std::vector<metalcall_cuda_layout> layout(info.params.size() + 1);
  const std::string& table = module->layout(found->layout_symbol);
  if (table.empty()) throw DeviceError("[cuda] finding the layout of kernel '" + name + "': the compiled module lacks it");
  std::memcpy(layout.data(), table.data(), std::min(table.size(), layout.size() * sizeof(metalcall_cuda_layout)));
  check_layout(info, layout);
  translated::apply_layout(info, layout.data());
  std::vector<ParamSlotOffsets> slots(info.params.size());
  for (std::size_t i = 0; i < slots.size(); ++i) slots[i] = {layout[i].value_offset, layout[i].pointer_offset};
  const std::size_t block_bytes = layout[info.params.size()].size;
  int max_threads = 0, static_smem = 0;
  a.cuFuncGetAttribute(&max_threads, FUNC_MAX_THREADS_PER_BLOCK, fn);
  a.cuFuncGetAttribute(&static_smem, FUNC_SHARED_SIZE_BYTES, fn);
  // Dynamic shared memory ([[threadgroup(i)]]) up to the device's opt-in limit.
  int dynamic_limit = static_cast<int>(props.smem_optin) - static_smem;
  if (dynamic_limit > 48 * 1024) a.cuFuncSetAttribute(fn, FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES, dynamic_limit);
  else dynamic_limit = 0;
  unsigned limit = props.info.max_threads_per_threadgroup;
  if (max_threads > 0) limit = std::min(limit, static_cast<unsigned>(max_threads));
  if (info.declared_max_threads) limit = std::min(limit, info.declared_max_threads);
  info.max_total_threads_per_threadgroup = limit;
  info.threads_synchronise = found->uses_fibers;
  return std::make_shared<CudaProgram>(std::move(info), modules, found->entry_symbol, fn, found->uses_fibers,
                                       static_cast<std::size_t>(std::max(0, static_smem)), dynamic_limit,
                                       std::move(slots), block_bytes);
}

}  // namespace metalcall::cuda
