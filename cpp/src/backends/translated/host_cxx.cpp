// Finding the C++ compiler — the system's, or zig's clang from the ziglang package —
// (its version line cached on disk, so a new process does not run `--version`) and
// running its preprocessor (output cached).
#include "backends/translated/host_cxx.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "backends/translated/process.hpp"
#include "core/disk_cache.hpp"
#include "core/hash.hpp"
#include "core/scratch_space.hpp"
#include "metalcall/errors.hpp"
#include "msl/parse/type_names.hpp"
#include "msl/translate/translator.hpp"

namespace metalcall::translated {

namespace {

// No honest preprocessed kernel comes near this; a bigger output is refused, not read.
constexpr std::uint64_t largest_preprocessed = std::uint64_t(1) << 30;

// The major version in `clang++ --version` ("clang version 16.0.6", "Apple clang version 15.0.0"), or 0.
int clang_major(const std::string& first_line) {
  const auto p = first_line.find("clang version ");
  if (p == std::string::npos) return 0;
  return std::atoi(first_line.c_str() + p + 14);
}

#ifdef __APPLE__
const struct timespec& modified(const struct stat& st) { return st.st_mtimespec; }
const struct timespec& changed(const struct stat& st) { return st.st_ctimespec; }
#else
const struct timespec& modified(const struct stat& st) { return st.st_mtim; }
const struct timespec& changed(const struct stat& st) { return st.st_ctim; }
#endif

// What identifies a compiler binary without running it: the setting that chose
// it, its resolved path, and the file's size, times and inode (an upgrade that
// replaces it changes them). Empty when the file cannot be examined.
std::string binary_fingerprint(const std::string& path) {
  char resolved[PATH_MAX];
  if (!realpath(path.c_str(), resolved)) return "";
  struct stat st;
  if (stat(resolved, &st) != 0) return "";
  const char* env = std::getenv("METALCALL_CXX");
  std::ostringstream out;
  out << "METALCALL_CXX=" << (env ? env : "") << "\n" << path << "\n" << resolved << "\n" << st.st_size << " "
      << st.st_ino << " " << st.st_dev << " " << modified(st).tv_sec << "." << modified(st).tv_nsec << " "
      << changed(st).tv_sec << "." << changed(st).tv_nsec;
  return out.str();
}

// The first line of `command --version`, from the disk cache when the binary at
// `path` (the command's program) is unchanged ("compilers" area, one small
// self-checking entry per binary and command).
std::string first_line_of_version(const std::vector<std::string>& command) {
  const std::string fingerprint = binary_fingerprint(command.front());
  DiskCache cache("compilers");
  ContentHash key_hash;
  key_hash.add("version 1").add(fingerprint);
  for (std::size_t i = 1; i < command.size(); ++i) key_hash.add(command[i]);  // `zig c++`, not `zig`
  const std::string key = key_hash.hex();
  if (!fingerprint.empty()) {
    // The entry repeats the fingerprint: a colliding or foreign entry is a miss.
    if (auto entry = cache.load_entry(key, ".id")) {
      const std::size_t split = entry->find('\0');
      if (split != std::string::npos && entry->compare(0, split, fingerprint) == 0) return entry->substr(split + 1);
    }
  }
  std::vector<std::string> argv = command;
  argv.push_back("--version");
  auto version = run_process(argv);
  if (version.exit_code != 0) return "";
  std::string line = version.output.substr(0, version.output.find('\n'));
  if (!fingerprint.empty() && !line.empty()) cache.save_entry(key, ".id", fingerprint + '\0' + line);
  return line;
}

// Zig's clang (the `ziglang` package, `pip install "metalcall[zig]"`): the binary the
// Python package found (METALCALL_ZIG), else `zig` on PATH; empty when there is none.
std::string find_zig() {
  const char* env = std::getenv("METALCALL_ZIG");
  if (env && *env) return find_program(env);
  return find_program("zig");
}

}  // namespace

namespace {

// g++'s template context, "file:line:col:   required from …" / "…:   in …", which
// points from the prelude back to the user's line.
bool parse_gnu_context_line(const std::string& line, msl::Diagnostic& d) {
  for (std::size_t colon = line.find(':'); colon != std::string::npos; colon = line.find(':', colon + 1)) {
    std::size_t p = colon + 1, line_begin = p;
    while (p < line.size() && std::isdigit(static_cast<unsigned char>(line[p]))) ++p;
    if (p == line_begin || p >= line.size() || line[p] != ':') continue;
    std::size_t column_begin = ++p;
    while (p < line.size() && std::isdigit(static_cast<unsigned char>(line[p]))) ++p;
    if (p == column_begin || p >= line.size() || line[p] != ':') continue;
    std::size_t text = p + 1;
    while (text < line.size() && (line[text] == ' ' || line[text] == '\t')) ++text;
    if (text == p + 1) continue;
    const std::string rest = line.substr(text);
    if (rest.rfind("required from", 0) != 0 && rest.rfind("in ", 0) != 0) continue;
    d.file = line.substr(0, colon);
    d.line = std::atoi(line.c_str() + line_begin);
    d.column = std::atoi(line.c_str() + column_begin);
    d.message = rest;
    d.error = false;
    return true;
  }
  return false;
}

}  // namespace

std::vector<msl::Diagnostic> parse_gnu_diagnostics(const std::string& log) {
  std::vector<msl::Diagnostic> out;
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    msl::Diagnostic d;
    if (msl::parse_clang_style_line(line, d) || parse_gnu_context_line(line, d)) out.push_back(d);
  }
  return out;
}

HostCxx& HostCxx::instance() {
  static HostCxx* compiler = new HostCxx();  // lives for the process
  return *compiler;
}

HostCxx::HostCxx() {
  const char* env = std::getenv("METALCALL_CXX");
  const bool zig_asked = env && std::string(env) == "zig";
  std::string first;
  if (env && *env && !zig_asked) {
    path_ = find_program(env);
    if (!path_.empty()) first = first_line_of_version({path_});
  } else if (!zig_asked) {
    // clang 15 or newer first: native _Float16 for half, and it vectorises the
    // thread loop about twice as well as g++ 12; then g++; then any C++ compiler.
    std::vector<std::string> candidates;
    for (int v = 22; v >= 15; --v) candidates.push_back("clang++-" + std::to_string(v));
    candidates.push_back("clang++");
    for (const auto& name : candidates) {
      const std::string path = find_program(name);
      if (path.empty()) continue;
      const std::string line = first_line_of_version({path});
      if (clang_major(line) >= 15) {
        path_ = path;
        first = line;
        break;
      }
    }
    for (const char* name : {"g++", "clang++", "c++"}) {
      if (!path_.empty()) break;
      path_ = find_program(name);
      if (!path_.empty()) first = first_line_of_version({path_});
    }
  }
  if (path_.empty()) {
    // Asked for, or no system compiler: zig's clang. It compiles with `zig c++` (libc++'s
    // headers: the prelude includes <initializer_list>) and links with `zig cc`, since
    // `zig c++` would link all of libc++ into every kernel object.
    const std::string zig = find_zig();
    if (!zig.empty()) {
      first = first_line_of_version({zig, "c++"});
      if (!first.empty()) {
        path_ = zig;
        compile_command_ = {zig, "c++"};
        link_command_ = {zig, "cc"};
        identity_ = zig + " c++ | " + first;
      }
    }
    return;
  }
  if (first.empty()) {
    path_.clear();
    return;
  }
  compile_command_ = {path_};
  identity_ = path_ + " | " + first;
}

std::string HostCxx::unavailable_reason() const {
  const char* env = std::getenv("METALCALL_CXX");
  if (env && std::string(env) == "zig") {
    return "METALCALL_CXX is set to 'zig', but zig's compiler was not found: pip install \"metalcall[zig]\" "
           "(the ziglang package), put zig on PATH, or unset METALCALL_CXX";
  }
  if (env && *env) {
    return std::string("METALCALL_CXX is set to '") + env + "', which cannot be run; set it to a C++17 compiler";
  }
#ifdef __APPLE__
  return "no C++ compiler found: install the Xcode command line tools (xcode-select --install), "
         "pip install \"metalcall[zig]\" for a bundled one, or set METALCALL_CXX";
#else
  return "no C++ compiler found: install clang or g++ (e.g. apt-get install g++), pip install \"metalcall[zig]\" "
         "for a bundled one, or set METALCALL_CXX";
#endif
}

std::string HostCxx::preprocess(const std::string& text, const msl::Macros& macros, const std::string& scope) {
  if (!available()) {
    throw DeviceError("[" + scope + "] this source uses the preprocessor (#define, #if or defines=), which needs a "
                      "host C++ compiler: " + unavailable_reason());
  }
  DiskCache cache(scope);
  // The output depends only on the compiler, the text and the macros: cached, so
  // a warm compile in a new process runs no compiler at all.
  ContentHash key_hash;
  key_hash.add("preprocess 2").add(identity_).add(text);
  for (const auto& [name, value] : macros) key_hash.add(name).add(value);
  const std::string key = key_hash.hex();
  if (auto hit = cache.load_entry(key, ".ii")) return *hit;
  // A private folder of this run, removed on every way out (errors included): in the
  // cache's folder, or where there is room when that one is full (scratch_space.hpp).
  std::string preprocessed;
  in_scratch_folder(cache.temp_parent(), "[" + scope + "]", [&](const std::string& folder, std::string& why) {
    const std::string input = folder + "/pp.metal";
    errno = 0;
    if (!write_file_atomic(input, text)) {
      why = errno ? std::strerror(errno) : "cannot write there";
      return false;
    }
    // -w: the text redefines __has_include and _Pragma (preprocessing.cpp), which both compilers warn about.
    std::vector<std::string> argv = compile_command_;
    argv.insert(argv.end(), {"-E", "-undef", "-nostdinc", "-w", "-x", "c++", "-std=c++17"});
    for (const auto& [name, value] : macros) argv.push_back("-D" + name + "=" + value);
    argv.push_back(input);  // the text comes back on its standard output
    // Bounded (core/compile_limits.hpp): macros that expand without end (each doubling the
    // last) are stopped when their text reaches the size limit, and the front end never
    // reads more.
    const CompileLimits limits = CompileLimits::current();
    ProcessLimits process;
    process.wall_seconds = limits.compiler_seconds;
    process.address_space = limits.compiler_memory;
    process.standard_output_bytes = limits.preprocessed_bytes ? limits.preprocessed_bytes : largest_preprocessed;
    ProcessResult result = run_process(argv, process, {{"TMPDIR", folder}});
    if (result.output_overflow) {
      throw CompileError("[" + scope + "] the preprocessed source reached " +
                         describe_limit(process.standard_output_bytes, "METALCALL_MAX_PREPROCESSED_BYTES") +
                         ": its macros expand to more text than any kernel needs (macros that expand each other "
                         "repeatedly?); raise the limit if this one is meant");
    }
    check_compiler_limits(result, limits, "the C preprocessor", scope);
    if (result.exit_code != 0) {
      why = full_folder_sign(result.output);
      if (!why.empty()) return false;
      std::string log = msl::restore_type_names(result.output);
      for (std::size_t p; (p = log.find(folder + "/")) != std::string::npos;) log.erase(p, folder.size() + 1);
      // The user's lines: what follows the text's `#line 1 "source.metal"` (the macros
      // text_for_preprocessor writes before it are not the user's: an error's excerpt was
      // taken from them, five lines off, until 2026-12-05).
      const std::string marker = std::string("#line 1 \"") + msl::kSourceName + "\"\n";
      const std::size_t user = text.find(marker);
      const std::string source = user == std::string::npos ? text : text.substr(user + marker.size());
      throw msl::compile_error(parse_gnu_diagnostics(log), nullptr, source, log,
                               "[" + scope + "] the kernel did not compile");
    }
    preprocessed = std::move(result.standard_output);
    return true;
  });
  cache.save_entry(key, ".ii", preprocessed);
  return preprocessed;
}

void check_compiler_limits(const ProcessResult& result, const CompileLimits& limits, const std::string& what,
                           const std::string& scope) {
  if (result.timed_out) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", limits.compiler_seconds);
    throw CompileError("[" + scope + "] " + what + " ran longer than the compile time limit of " + seconds +
                       " s (METALCALL_COMPILE_TIMEOUT) and was stopped; raise the limit if this source is meant");
  }
  if (result.signal == SIGXFSZ) {
    throw CompileError("[" + scope + "] " + what + " wrote a file over the 1 GiB a kernel object may take, and was "
                       "stopped");
  }
  if (limits.compiler_memory && (ran_out_of_memory(result) || result.signal == SIGSEGV || result.signal == SIGABRT ||
                                 result.signal == SIGKILL)) {
    throw CompileError("[" + scope + "] " + what + " ran out of memory under " +
                       describe_limit(limits.compiler_memory, "METALCALL_COMPILER_MEMORY") +
                       " (or crashed: code nested deeper than its stack allows, such as tens of thousands of "
                       "operators in one statement, does that); raise the limit if this source is meant. Its "
                       "output:\n" + result.output);
  }
  if (result.signal == SIGXCPU) {
    throw CompileError("[" + scope + "] " + what + " used more CPU time than the compile time limit allows "
                       "(METALCALL_COMPILE_TIMEOUT) and was stopped");
  }
}

msl::Preprocessor host_preprocessor(const std::string& scope) {
  return [scope](const std::string& text, const msl::Macros& macros) {
    return HostCxx::instance().preprocess(text, macros, scope);
  };
}

}  // namespace metalcall::translated
