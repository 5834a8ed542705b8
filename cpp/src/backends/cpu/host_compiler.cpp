#include "backends/cpu/host_compiler.hpp"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <regex>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/cpu/embedded_prelude.hpp"
#include "backends/cpu/process.hpp"
#include "core/disk_cache.hpp"
#include "core/hash.hpp"
#include "metalcall/errors.hpp"
#include "msl/diagnostics.hpp"
#include "msl/signature_parser.hpp"
#include "msl/lexer.hpp"
#include "msl/type_names.hpp"

namespace metalcall::cpu {

namespace {

std::vector<std::string> target_flags() {
#if defined(__x86_64__)
  return {"-march=native"};
#elif defined(__aarch64__) && !defined(__APPLE__)
  return {"-mcpu=native"};
#else
  return {};
#endif
}

// The CPU model and features, so that a shared cache folder never serves a
// binary built with -march=native for another processor.
std::string cpu_fingerprint() {
  auto info = read_file("/proc/cpuinfo");
  if (!info) return "";
  std::string out;
  std::istringstream in(*info);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0 || line.rfind("flags", 0) == 0 || line.rfind("Features", 0) == 0 ||
        line.rfind("CPU part", 0) == 0) {
      out += line + "\n";
      if (out.size() > 4096) break;
    }
    if (line.empty() && !out.empty()) break;  // the first processor is enough
  }
  return ContentHash().add(out).hex();
}

std::vector<msl::Diagnostic> parse_diagnostics(const std::string& log) {
  static const std::regex pattern(R"(^(.*?):(\d+):(\d+): (fatal error|error|warning|note): (.*)$)");
  static const std::regex context(R"(^(.*?):(\d+):(\d+):\s+(required from.*|in .*)$)");
  std::vector<msl::Diagnostic> out;
  std::istringstream in(log);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_match(line, m, pattern)) {
      const bool error = m[4] == "error" || m[4] == "fatal error";
      out.push_back({m[1], std::stoi(m[2]), std::stoi(m[3]), m[5], error});
    } else if (std::regex_match(line, m, context)) {
      out.push_back({m[1], std::stoi(m[2]), std::stoi(m[3]), m[4], false});
    }
  }
  return out;
}

CompileError compile_error(const std::string& raw_log, const msl::SourceMap* map, const std::string& source,
                           const std::string& scratch) {
  std::string log = msl::restore_type_names(raw_log);
  // The temporary folder is noise to the user.
  for (std::size_t p; (p = log.find(scratch + "/")) != std::string::npos;) log.erase(p, scratch.size() + 1);
  return msl::compile_error(parse_diagnostics(log), map, source, log, "[cpu] the kernel did not compile");
}

}  // namespace

HostCompiler& HostCompiler::instance() {
  static HostCompiler* compiler = new HostCompiler();  // lives for the process
  return *compiler;
}

namespace {

// The major version in `clang++ --version` ("clang version 16.0.6", "Apple clang version 15.0.0"), or 0.
int clang_major(const std::string& first_line) {
  const auto p = first_line.find("clang version ");
  if (p == std::string::npos) return 0;
  return std::atoi(first_line.c_str() + p + 14);
}

std::string first_line_of_version(const std::string& path) {
  auto version = run_process({path, "--version"});
  if (version.exit_code != 0) return "";
  return version.output.substr(0, version.output.find('\n'));
}

}  // namespace

HostCompiler::HostCompiler() {
  const char* env = std::getenv("METALCALL_CXX");
  std::string first;
  if (env && *env) {
    path_ = find_program(env);
    if (!path_.empty()) first = first_line_of_version(path_);
  } else {
    // clang 15 or newer first: native _Float16 for half, and it vectorises the
    // thread loop about twice as well as g++ 12; then g++; then any C++ compiler.
    std::vector<std::string> candidates;
    for (int v = 22; v >= 15; --v) candidates.push_back("clang++-" + std::to_string(v));
    candidates.push_back("clang++");
    for (const auto& name : candidates) {
      const std::string path = find_program(name);
      if (path.empty()) continue;
      const std::string line = first_line_of_version(path);
      if (clang_major(line) >= 15) {
        path_ = path;
        first = line;
        break;
      }
    }
    for (const char* name : {"g++", "clang++", "c++"}) {
      if (!path_.empty()) break;
      path_ = find_program(name);
      if (!path_.empty()) first = first_line_of_version(path_);
    }
  }
  if (path_.empty()) return;
  if (first.empty()) {
    path_.clear();
    return;
  }
  identity_ = path_ + " | " + first;
  for (const auto& f : target_flags()) identity_ += " " + f;
  identity_ += " | cpu " + cpu_fingerprint() + " | translator " + std::to_string(msl::kTranslatorVersion);
}

std::string HostCompiler::unavailable_reason() const {
  const char* env = std::getenv("METALCALL_CXX");
  if (env && *env) {
    return std::string("METALCALL_CXX is set to '") + env + "', which cannot be run; set it to a C++17 compiler";
  }
#ifdef __APPLE__
  return "no C++ compiler found: install the Xcode command line tools (xcode-select --install), or set METALCALL_CXX";
#else
  return "no C++ compiler found: install clang or g++ (e.g. apt-get install g++), or set METALCALL_CXX";
#endif
}

std::string HostCompiler::prelude_folder() {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  if (!prelude_folder_.empty()) return prelude_folder_;
  ContentHash h;
  for (std::size_t i = 0; i < kEmbeddedPreludeCount; ++i) h.add(kEmbeddedPrelude[i].name).add(kEmbeddedPrelude[i].text);
  DiskCache cache("prelude");
  const std::string folder = cache.scratch() + "/" + h.hex();
  mkdir(folder.c_str(), 0755);
  for (std::size_t i = 0; i < kEmbeddedPreludeCount; ++i) {
    const std::string path = folder + "/" + kEmbeddedPrelude[i].name;
    auto existing = read_file(path);
    if (existing && *existing == kEmbeddedPrelude[i].text) continue;
    if (!write_file_atomic(path, kEmbeddedPrelude[i].text)) {
      throw DeviceError("[cpu] cannot write the MSL prelude to " + folder + "; set METALCALL_CACHE_DIR to a writable folder");
    }
  }
  prelude_folder_ = folder;
  return folder;
}

std::string HostCompiler::build(const msl::Translation& tr, const std::string& source, bool fast_math) {
  if (!available()) throw DeviceError("[cpu] " + unavailable_reason());
  std::vector<std::string> flags = {"-std=c++17", "-O3", "-fPIC", "-shared", "-fvisibility=hidden",
                                    "-fno-math-errno", "-fno-trapping-math", "-fno-exceptions", "-fno-rtti",
                                    // MSL's char is signed; arm64 Linux would make it unsigned.
                                    "-fsigned-char",
                                    // Lets the thread loop use `omp simd` without OpenMP's runtime.
                                    "-fopenmp-simd"};
  if (fast_math) {
    // Metal's fast math reassociates and contracts; NaN and infinity still work here.
    for (const char* f : {"-ffp-contract=fast", "-fno-signed-zeros", "-freciprocal-math", "-fassociative-math"})
      flags.push_back(f);
  } else {
    flags.push_back("-ffp-contract=off");
  }
  for (const auto& f : target_flags()) flags.push_back(f);
#if defined(__linux__)
  // Fiber stacks have one guard page: large frames must probe it (Apple's clang
  // does not offer the flag on every target; its default stack probing covers arm64).
  flags.push_back("-fstack-clash-protection");
#endif

  ContentHash key_hash;
  key_hash.add(identity_).add(tr.code);
  for (const auto& f : flags) key_hash.add(f);
  const std::string key = key_hash.hex();

  DiskCache cache("cpu");
  if (auto hit = cache.find(key, ".so")) return *hit;

  const std::string prelude = prelude_folder();
  // Unique per process and per call: two threads may build the same source at once.
  static std::atomic<unsigned> builds{0};
  const std::string base = cache.scratch() + "/" + key + "." + std::to_string(getpid()) + "." +
                           std::to_string(builds.fetch_add(1));
  const std::string cpp_path = base + ".cpp";
  const std::string so_path = base + ".so";
  if (!write_file_atomic(cpp_path, tr.code)) {
    throw DeviceError("[cpu] cannot write to " + cache.scratch() + "; set METALCALL_CACHE_DIR to a writable folder");
  }
  std::vector<std::string> argv = {path_};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"-I", prelude, "-o", so_path, cpp_path, "-lm"});
  ProcessResult result = run_process(argv);
  std::remove(cpp_path.c_str());
  if (result.exit_code != 0) {
    std::remove(so_path.c_str());
    throw compile_error(result.output, &tr.map, source, cache.scratch());
  }
  if (cache.store(key, ".so", so_path)) {
    if (auto stored = cache.find(key, ".so")) return *stored;
  }
  return so_path;  // a read-only cache: the scratch copy serves this process
}

namespace {

bool is_prelude_include(const std::string& directive) {
  std::size_t p = directive.find_first_not_of(" \t", 1);
  if (p == std::string::npos || directive.compare(p, 7, "include") != 0) return false;
  p = directive.find_first_not_of(" \t", p + 7);
  return p != std::string::npos && (directive.compare(p, 7, "<metal_") == 0 || directive.compare(p, 6, "<simd/") == 0);
}

bool is_directive(const std::string& directive, const char* name) {
  std::size_t p = directive.find_first_not_of(" \t", 1);
  return p != std::string::npos && directive.compare(p, std::string(name).size(), name) == 0;
}

}  // namespace

bool HostCompiler::needs_preprocessing(const std::string& source,
                                       const std::vector<std::pair<std::string, std::string>>& defines) {
  if (!defines.empty()) return true;
  for (const auto& t : msl::tokenize(source))
    if (t.kind == msl::TokenKind::directive && !is_prelude_include(t.text) && !is_directive(t.text, "pragma"))
      return true;
  return false;
}

std::string HostCompiler::preprocess(const std::string& source,
                                     const std::vector<std::pair<std::string, std::string>>& defines) {
  if (!available()) throw DeviceError("[cpu] " + unavailable_reason());
  // Drop the metal includes, keeping every line where it was.
  std::vector<std::string> lines;
  {
    std::istringstream in(source);
    std::string line;
    while (std::getline(in, line)) lines.push_back(line);
  }
  for (const auto& t : msl::tokenize(source)) {
    if (t.kind != msl::TokenKind::directive || !is_directive(t.text, "include")) continue;
    if (!is_prelude_include(t.text)) {
      throw msl::error_at(source, t, "#include is not supported: metalcall compiles one source (the metal_ headers "
                                     "are built in); paste the code in, or pass macros with defines=");
    }
    if (t.line >= 1 && static_cast<std::size_t>(t.line) <= lines.size()) lines[t.line - 1].clear();
  }
  std::string text = "#line 1 \"" + std::string(msl::kSourceName) + "\"\n";
  for (const auto& l : lines) text += l + "\n";

  DiskCache cache("cpu");
  static std::atomic<unsigned> runs{0};
  const std::string base = cache.scratch() + "/pp." + std::to_string(getpid()) + "." + std::to_string(runs.fetch_add(1));
  if (!write_file_atomic(base + ".metal", text)) {
    throw DeviceError("[cpu] cannot write to " + cache.scratch() + "; set METALCALL_CACHE_DIR to a writable folder");
  }
  std::vector<std::string> argv = {path_, "-E", "-undef", "-nostdinc", "-x", "c++", "-std=c++17",
                                   "-D__METAL_VERSION__=320"};
  for (const auto& [name, value] : defines) argv.push_back("-D" + name + "=" + value);
  argv.insert(argv.end(), {"-o", base + ".ii", base + ".metal"});
  ProcessResult result = run_process(argv);
  auto output = read_file(base + ".ii");
  std::remove((base + ".metal").c_str());
  std::remove((base + ".ii").c_str());
  if (result.exit_code != 0 || !output) throw compile_error(result.output, nullptr, source, cache.scratch());
  return *output;
}

}  // namespace metalcall::cpu
