// The CPU backend's compiler (see cpu_compiler.hpp).
#include "backends/cpu/cpu_compiler.hpp"
#include "backends/cpu/stack_limits.hpp"
#include "backends/translated/host_cxx.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <future>
#include <optional>
#include <sstream>
#include <sys/resource.h>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

#include "backends/cpu/cpu_compile_head.hpp"
#include "backends/cpu/cpu_verify.hpp"
#include "backends/cpu/kernel_object.hpp"
#include "backends/cpu/kernel_stop.hpp"
#include "backends/translated/embedded_prelude.hpp"
#include "backends/translated/host_cxx.hpp"
#include "backends/translated/process.hpp"
#include "backends/translated/translated_library.hpp"
#include "core/disk_cache.hpp"
#include "core/hash.hpp"
#include "core/scratch_space.hpp"
#include "metalcall/errors.hpp"
#include "metalcall/translation_check.hpp"
#include "msl/errors/diagnostics.hpp"
#include "msl/parse/type_names.hpp"
#include "msl/verify/translation_verifier.hpp"

namespace metalcall::cpu {

using translated::HostCxx;
using translated::kEmbeddedPrelude;
using translated::kEmbeddedPreludeCount;
using translated::check_compiler_limits;
using translated::ProcessLimits;
using translated::ProcessResult;
using translated::run_process;

namespace {

// No kernel object comes near this; a bigger file is refused, not read.
constexpr std::uint64_t kLargestObject = std::uint64_t(1) << 30;

// Whether a compiler's "File too large" was the cap this backend puts on its files (RLIMIT_FSIZE
// at kLargestObject), not a lower one the process itself runs under: then the source is too big
// for any folder, and trying the next one only repeats the compile.
bool file_cap_is_ours() {
  struct rlimit limit {};
  if (getrlimit(RLIMIT_FSIZE, &limit) != 0) return false;
  return limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= kLargestObject;
}

// True for compilers whose -fstack-usage file has a known name when compiling and
// linking in one step: g++ >= 11 and clang >= 13 (Apple's >= 14).
bool reports_stack_usage(const std::string& identity) {
  const std::size_t clang = identity.find("clang version ");
  if (clang != std::string::npos) {
    const int major = std::atoi(identity.c_str() + clang + 14);
    return major >= (identity.find("Apple") != std::string::npos ? 14 : 13);
  }
  if (identity.find("g++") == std::string::npos) return false;
  const std::size_t space = identity.find_last_of(' ');
  return space != std::string::npos && std::atoi(identity.c_str() + space + 1) >= 11;
}

// Flags that make _Float16 (MSL's half on the CPU) round every operation to half, as
// MSL does. On x86-64, where the processor has no half arithmetic, clang >= 16 (Apple's
// >= 15) keeps half expressions in float until they are stored ("excess precision"):
// a * b + c was rounded once instead of twice, a different half in 1 of 4 random cases.
// g++ 12 rounds each operation in C++; g++ >= 13 follows -fexcess-precision=standard,
// which -fexcess-precision=16 turns off for _Float16.
std::vector<std::string> half_precision_flags(const std::string& identity) {
#if defined(__x86_64__)
  const std::size_t clang = identity.find("clang version ");
  if (clang != std::string::npos) {
    const int major = std::atoi(identity.c_str() + clang + 14);
    if (major >= (identity.find("Apple") != std::string::npos ? 15 : 16))
      return {"-Xclang", "-ffloat16-excess-precision=none"};
    return {};
  }
  const std::size_t space = identity.find_last_of(' ');
  if (identity.find("g++") != std::string::npos && space != std::string::npos &&
      std::atoi(identity.c_str() + space + 1) >= 13)
    return {"-fexcess-precision=16"};
#else
  (void)identity;
#endif
  return {};
}

// glibc's vector math library (libmvec: sinf, cosf, expf, logf, powf ... on 4, 8 and 16 lanes,
// within 4 ulp), which clang's loop vectoriser calls from a thread loop it vectorises
// (-fveclib=libmvec): where it is loadable, on x86-64 Linux. Loaded here, once: the kernel
// objects that need it find it in the process (the sandbox worker preloads it too).
bool vector_math_available() {
#if defined(__linux__) && defined(__x86_64__)
  static const bool available = dlopen("libmvec.so.1", RTLD_NOW | RTLD_GLOBAL) != nullptr;
  return available;
#else
  return false;
#endif
}

// Whether translated code calls one of the functions clang 16 maps to libmvec (sin, cos, exp,
// log, pow; powr and sincos lower to them): a name of them followed by '('.
bool calls_vector_math(const std::string& code) {
  static const char* const names[] = {"sin", "cos", "exp", "log", "pow", "powr", "sincos"};
  const auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (const char* name : names) {
    const std::size_t len = std::strlen(name);
    for (std::size_t at = code.find(name); at != std::string::npos; at = code.find(name, at + 1)) {
      if (at > 0 && ident(code[at - 1])) continue;
      std::size_t after = at + len;
      if (after < code.size() && ident(code[after])) continue;
      while (after < code.size() && (code[after] == ' ' || code[after] == '\t')) ++after;
      if (after < code.size() && code[after] == '(') return true;
    }
  }
  return false;
}

std::vector<std::string> target_flags() {
#if defined(__x86_64__)
  return {"-march=native"};
#elif defined(__aarch64__) && !defined(__APPLE__)
  return {"-mcpu=native"};
#else
  return {};
#endif
}

// The first processor's record of /proc/cpuinfo. Read in small chunks and
// stopped at its end: the kernel formats records as they are read, and on a
// machine with many cores the whole file costs milliseconds.
std::string first_cpuinfo_record() {
  const int fd = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string text;
  char chunk[4096];
  while (text.find("\n\n") == std::string::npos && text.size() < (1 << 16)) {
    const ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(chunk, static_cast<std::size_t>(n));
  }
  close(fd);
  return text.substr(0, text.find("\n\n"));
}

// The CPU model and features, so that a shared cache folder never serves a
// binary built with -march=native for another processor.
std::string cpu_fingerprint() {
  std::string out;
  std::istringstream in(first_cpuinfo_record());
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0 || line.rfind("flags", 0) == 0 || line.rfind("Features", 0) == 0 ||
        line.rfind("CPU part", 0) == 0) {
      out += line + "\n";
      if (out.size() > 4096) break;
    }
  }
  return ContentHash().add(out).hex();
}

CompileError compile_error(const std::string& raw_log, const msl::SourceMap* map, const std::string& source,
                           const std::string& scratch) {
  std::string log = msl::restore_type_names(raw_log);
  // The temporary folder is noise to the user.
  for (std::size_t p; (p = log.find(scratch + "/")) != std::string::npos;) log.erase(p, scratch.size() + 1);
  return msl::compile_error(translated::parse_gnu_diagnostics(log), map, source, log, "[cpu] the kernel did not compile");
}

}  // namespace

CpuCompiler& CpuCompiler::instance() {
  static CpuCompiler* compiler = new CpuCompiler();  // lives for the process
  return *compiler;
}

CpuCompiler::CpuCompiler() {
  const HostCxx& host = HostCxx::instance();
  if (!host.available()) {
    identity_ = "none";
    return;
  }
  identity_ = host.identity();
  for (const auto& f : target_flags()) identity_ += " " + f;
  identity_ += " | cpu " + cpu_fingerprint() + " | translator " + std::to_string(msl::kTranslatorVersion) +
               " | prelude " + translated::embedded_prelude_hash();
}

bool CpuCompiler::available() const { return HostCxx::instance().available(); }

bool CpuCompiler::write_prelude(const std::string& folder) {
  // Written into each build's private folder (168 KB, a fraction of a millisecond next
  // to the C++ compiler's ~0.3 s): headers the compiler includes are never read from a
  // folder that someone could change, or that `cache clear` could empty mid-build.
  bool ok = mkdir(folder.c_str(), 0700) == 0;
  for (std::size_t i = 0; ok && i < kEmbeddedPreludeCount; ++i)
    ok = write_file_atomic(folder + "/" + kEmbeddedPrelude[i].name, kEmbeddedPrelude[i].text);
  return ok;
}

std::string CpuCompiler::build(const msl::Translation& tr, const std::string& source, bool fast_math, bool checked) {
  const HostCxx& host = HostCxx::instance();
  if (!host.available()) throw DeviceError("[cpu] " + host.unavailable_reason());
  // Checked mode is for finding a kernel's bad accesses, not for speed: its translations (a check
  // at every access) took g++ -O3 0.94 s on average against 0.50 s for plain ones, and up to 7 s
  // (tests/conformance, 2026-12-06); at -O1 the largest took 3.1 s. Plain builds stay at -O3.
  std::vector<std::string> flags = {"-std=c++17", checked ? "-O1" : "-O3", "-fPIC", "-shared", "-fvisibility=hidden",
                                    "-fno-math-errno", "-fno-trapping-math", "-fno-exceptions", "-fno-rtti",
                                    // MSL's char is signed; arm64 Linux would make it unsigned.
                                    "-fsigned-char",
                                    // Lets the thread loop use `omp simd` without OpenMP's runtime.
                                    "-fopenmp-simd",
                                    // MSL (C++14) has no variable-length arrays; g++ and clang accept
                                    // them as an extension, sized on the stack at run time, through
                                    // any typedef, template or decltype: the compiler finds them all.
                                    "-Werror=vla",
                                    // A recursion the front end cannot see (through operators,
                                    // constructors, objects called as functions) must recurse, so
                                    // that the stack guard stops it: as a tail call the compiler
                                    // made an endless one a loop without a stop check, which
                                    // neither kernel_timeout nor Ctrl-C ended.
                                    "-fno-optimize-sibling-calls"};
  const bool clang = host.identity().find("clang version ") != std::string::npos;
  if (fast_math) {
    // Metal's fast math reassociates and contracts; NaN and infinity still work here.
    // The prelude picks the faster of a function's forms where fast math allows it (rsqrt).
    flags.push_back("-DMETALCALL_FAST_MATH=1");
    flags.push_back("-ffp-contract=fast");
    // No -freciprocal-math: half's x / y is correctly rounded with fast math too (specification,
    // table 8.3, which has no fast-math column), and clang cannot allow reciprocals for float
    // alone: with it `h / 3.0h` became h * half(1/3) and a division by a loop-invariant half
    // h * (1 / d) rounded to half, one ulp off for 19836 of the 63488 finite halves.
    // Zeros keep their sign, as on Apple's and NVIDIA's GPUs (-step(e, x) is -0.0): g++ with
    // -fno-signed-zeros negates by subtracting from zero (+0.0), and reassociates only with it,
    // so g++ gets neither; clang keeps negation a sign flip under both.
    if (clang) {
      flags.push_back("-fno-signed-zeros");
      flags.push_back("-fassociative-math");
    }
  } else {
    flags.push_back("-ffp-contract=off");
  }
  // Vector calls of libm's functions in fast-math builds (Metal's fast math allows their
  // error): mnp.sin of 1e6 float32 took 1.0 ms here, NumPy's SIMD sin 0.52. Not for the zig
  // toolchain, whose own link step knows no libmvec.
  const bool vector_math = fast_math && clang && host.link_command().empty() && vector_math_available();
  if (vector_math) {
    flags.push_back("-fveclib=libmvec");
    // The thread loop at 8 lanes, which libmvec's functions take (target_cpu.cpp).
    if (calls_vector_math(tr.code)) flags.push_back("-DMETALCALL_VECTOR_MATH=1");
  }
  for (const auto& f : target_flags()) flags.push_back(f);
  for (const auto& f : half_precision_flags(host.identity())) flags.push_back(f);
  // MSL code casts 4-byte-aligned pointers to float4* (Metal accepts it): clang assumes
  // at most 8 bytes through a pointer, so a vector access is an unaligned move
  // (metal_vector.h). g++ has no such flag: the access faults on x86-64 there.
  if (clang) flags.push_back("-fmax-type-align=8");
  // MSL converts a NaN to the integer 0 (specification section 8.6) and GPUs saturate what is
  // out of range; x86's cvttss2si gives INT_MIN. clang's -fno-strict-float-cast-overflow would
  // too (LLVM's saturating conversions), but made every float-to-integer kernel 8.5x slower here
  // (2^20 floats: 434 against 50 µs; clang 16 expands the saturating conversion lane by lane): not
  // used. The translation hands each conversion to int, uint, long and ulong it sees to the
  // prelude instead (metal_conversion.h: a compare and a select beside the vectorised conversion);
  // docs/design.md, "Known limits of the CPU backend", says which it does not see.
  // Frame sizes for check_stack_usage (stack_limits.hpp).
  const bool stack_usage = reports_stack_usage(host.identity());
  if (stack_usage) flags.push_back("-fstack-usage");
#if defined(__linux__)
  // Fiber stacks have one guard page: large frames must probe it (Apple's clang
  // does not offer the flag on every target; its default stack probing covers arm64).
  flags.push_back("-fstack-clash-protection");
#endif

  ContentHash key_hash;
  key_hash.add(identity_).add(tr.code);
  for (const auto& f : flags) key_hash.add(f);
  // A verified build is its own cache entry: a hit then stands for a build that passed the
  // check, and only cold compiles pay for it (DESIGN.md section 6).
  const bool verify = translation_verification_requested();
  const std::string unverified_key = key_hash.hex();
  const std::string verified_key = key_hash.add("verified by libclang, checks 2").hex();
  const std::string key = verify ? verified_key : unverified_key;

  DiskCache cache("cpu");
  if (auto hit = cache.load_entry(key, ".so")) return *hit;
  // Without the check asked for, a build that passed it serves as well (CI's simulator steps,
  // METALCALL_VERIFY=0, found none of the test run's builds and compiled them all again).
  if (!verify)
    if (auto hit = cache.load_entry(verified_key, ".so")) return *hit;

  // The verifier's precompiled head made beside the build, if the process has none: its making
  // otherwise came after the compile, in series (a small kernel's first compile in a process with
  // an empty cache: 480-600 ms with the verifier, 280-320 without, on the 2-core box).
  // The future waits for it on every way out of the build.
  std::future<void> verify_head;
  if (verify) {
    try {
      verify_head = std::async(std::launch::async, [code = tr.code] { prepare_verification(code); });
    } catch (const std::system_error&) {  // no thread to be had: the verification makes it after
    }
  }

  // Everything of this build lives in a private folder removed on every way out: in the
  // cache's folder, or where there is room when that one is full (scratch_space.hpp).
  std::string object;
  in_scratch_folder(cache.temp_parent(), "[cpu]", [&](const std::string& temp, std::string& why) {
    auto cannot_write = [&why] {
      why = errno ? std::strerror(errno) : "cannot write there";
      return false;
    };
    const std::string prelude = temp + "/prelude";
    const std::string cpp_path = temp + "/" + key + ".cpp";
    const std::string so_path = temp + "/" + key + ".so";
    errno = 0;
    if (!write_prelude(prelude)) return cannot_write();
    // One command compiles and links; where the compiler links separately (zig), compile to an
    // object first.
    const std::vector<std::string>& link = host.link_command();
    const std::string object_path = link.empty() ? so_path : temp + "/" + key + ".o";
    // Bounded (core/compile_limits.hpp): a source of millions of statements ends at the time
    // limit. The compiler's own temporary files go to this folder too.
    const CompileLimits limits = CompileLimits::current();
    ProcessLimits process;
    process.wall_seconds = limits.compiler_seconds;
    process.address_space = limits.compiler_memory;
    process.file_bytes = kLargestObject;
    const std::vector<std::pair<std::string, std::string>> environment = {{"TMPDIR", temp}};
    // With clang (the system's: zig's links apart), the unit's head comes precompiled
    // (cpu_compile_head.hpp); a build with it that fails, but for a limit, is done again whole,
    // so an error reads as it always does and a bad header is never the last word.
    const std::string head = clang && link.empty() ? msl::translation_head(tr.code) : std::string();
    std::optional<HeadHeader> header;
    if (!head.empty())
      header.emplace(temp, prelude, head, HeadCompiler{host.compile_command(), identity_, flags, process});
    const auto compile = [&](bool with_header) -> std::optional<ProcessResult> {
      if (!write_file_atomic(cpp_path, with_header ? msl::blank_head(tr.code, head.size()) : tr.code)) return {};
      std::vector<std::string> argv = host.compile_command();
      argv.insert(argv.end(), flags.begin(), flags.end());
      if (with_header) argv.insert(argv.end(), {"-include-pch", header->path()});
      if (!link.empty()) argv.push_back("-c");
      argv.insert(argv.end(), {"-I", prelude, "-o", object_path, cpp_path});
      if (link.empty()) argv.push_back("-lm");
      if (vector_math) argv.push_back("-l:libmvec.so.1");  // the runtime file: no -dev package needed
      ProcessResult run = run_process(argv, process, environment);
      check_compiler_limits(run, limits, "the C++ compiler", "cpu");
      return run;
    };
    const bool with_header = header && !header->path().empty();
    std::optional<ProcessResult> compiled = compile(with_header);
    if (compiled && compiled->exit_code != 0 && with_header) {
      compiled = compile(false);
      // Whole, it compiled where it did not with the header: the header was the trouble.
      if (compiled && compiled->exit_code == 0) header->failed();
    }
    if (!compiled) return cannot_write();
    ProcessResult result = std::move(*compiled);
    if (result.exit_code == 0 && !link.empty()) {
      std::vector<std::string> link_argv = link;
      link_argv.insert(link_argv.end(), {"-shared", "-o", so_path, object_path, "-lm"});
      result = run_process(link_argv, process, environment);
      check_compiler_limits(result, limits, "the linker", "cpu");
    }
    if (result.exit_code != 0) {
      why = full_folder_sign(result.output);  // the disk filled up under the compiler
      if ((why == "File too large" || result.output.find("File size limit exceeded") != std::string::npos) &&
          file_cap_is_ours())
        throw CompileError("[cpu] the C++ compiler wrote a file over the 1 GiB a kernel object may take, and was "
                           "stopped (constant arrays or code that large?)");
      if (!why.empty()) return false;
    }
    // The frame sizes: g++ >= 11 names the file <so>-<source stem>.su, clang <stem>.su.
    std::string usage;
    if (stack_usage) {
      const std::string stem = temp + "/" + key;
      for (const std::string& path : {so_path + "-" + key + ".su", stem + ".su"}) {
        if (auto text = read_file(path)) usage += *text;
      }
    }
    if (result.exit_code != 0) throw compile_error(result.output, &tr.map, source, temp);
    check_stack_usage(usage, tr, source);
    auto built = read_owned_file(so_path, kLargestObject, ReadAs::private_output);
    if (!built) throw DeviceError("[cpu] the C++ compiler reported success but wrote no kernel object " + so_path);
    object = std::move(*built);
    return true;
  });
  // After the build: the host compiler's own error (on the user's lines) answers code it refuses,
  // and a source that makes compilers work without end has met its bounds there (compile_limits.hpp).
  // Nothing of the object runs or is kept before the check passes.
  if (verify) verify_or_throw(tr.code);
  cache.save_entry(key, ".so", object);  // nothing happens when the cache is read-only or full
  return object;
}

// ---- programs ----

CpuModule::CpuModule(const std::string& object) : handle_(load_kernel_object(object)) {
  // The loops' stop checks read the process's stop word (kernel_stop.hpp).
  if (auto* stop = static_cast<metalcall_cpu_stop*>(dlsym(handle_, msl::kCpuStopSymbol))) *stop = stop_hooks();
}

CpuModule::~CpuModule() { dlclose(handle_); }

void* CpuModule::symbol(const std::string& name) const { return dlsym(handle_, name.c_str()); }

std::shared_ptr<Program> load_program(const msl::TranslatedKernel& kernel, const std::shared_ptr<CpuModule>& module,
                                      bool checked) {
  KernelInfo info = kernel.info;
  auto* layout = static_cast<const metalcall_cpu_layout*>(module->symbol(kernel.layout_symbol));
  auto entry = reinterpret_cast<metalcall_cpu_entry>(module->symbol(kernel.entry_symbol));
  if (!layout || !entry) throw DeviceError("[cpu] the compiled kernel '" + info.name + "' lacks its entry point");
  translated::apply_layout(info, layout);
  // A pipeline never takes more than the device (1024), whatever the kernel declares: Metal's
  // maxTotalThreadsPerThreadgroup is at most the device's (2048 was taken before 2026-12-05).
  info.max_total_threads_per_threadgroup = info.declared_max_threads ? std::min(info.declared_max_threads, 1024u) : 1024;
  info.threads_synchronise = kernel.uses_fibers || kernel.runs_regions;
  info.thread_schedule = kernel.runs_regions ? "regions" : kernel.uses_fibers ? "fibers" : "loop";
  return std::make_shared<CpuProgram>(std::move(info), module, entry, kernel.uses_fibers, checked);
}

msl::FrontEndOptions cpu_front_end_options(const CompileOptions& options, bool checked) {
  msl::FrontEndOptions front;
  front.target = msl::Target::cpu;
  front.defines = options.defines;
  front.language_version = options.language_version;
  front.checked = checked;
  front.preprocessor = translated::host_preprocessor("cpu");
  // No poison_threadgroup: CPU translations always carry the poisoning, switched per launch
  // (DispatchCommand::poison_threadgroup), so one translation serves poisoned and plain runs.
  return front;
}

}  // namespace metalcall::cpu
