// The C++ compiler (METALCALL_CXX, else clang++ >= 15, else g++, else c++, else zig's
// clang from the ziglang package; METALCALL_CXX=zig asks for zig's): found once per process. The CPU backend builds kernels with it; both translating
// backends run its preprocessor over MSL sources that need one.
#pragma once

#include <string>
#include <vector>

#include "backends/translated/process.hpp"
#include "core/compile_limits.hpp"
#include "msl/errors/diagnostics.hpp"
#include "msl/translate/front_end.hpp"

namespace metalcall::translated {

class HostCxx {
 public:
  /** The process-wide compiler (found once). */
  static HostCxx& instance();

  bool available() const { return !path_.empty(); }
  /** Why none was found and how to install one. */
  std::string unavailable_reason() const;
  const std::string& path() const { return path_; }
  /** The command that compiles C++: {path} for a system compiler, {zig, "c++"} for zig's clang. */
  const std::vector<std::string>& compile_command() const { return compile_command_; }
  /**
   * The command that links objects into a shared object, where compiling and linking are two
   * steps ({zig, "cc"}: `zig c++` would link libc++ into the kernel); empty: compile_command links.
   */
  const std::vector<std::string>& link_command() const { return link_command_; }
  /** Path and version line, e.g. "/usr/bin/g++ | g++ (Debian 12.2.0-14) 12.2.0". */
  const std::string& identity() const { return identity_; }

  /**
   * Runs the preprocessor (`-E`) over `text` with `macros`; CompileError at the
   * user's line when it fails. `scope` ("cpu", "cuda") starts error messages.
   */
  std::string preprocess(const std::string& text, const msl::Macros& macros, const std::string& scope);

 private:
  HostCxx();
  std::string path_;
  std::string identity_;
  std::vector<std::string> compile_command_, link_command_;
};

/** The front end's Preprocessor, run by the host C++ compiler; errors scoped by `scope`. */
msl::Preprocessor host_preprocessor(const std::string& scope);

/**
 * CompileError naming the limit (core/compile_limits.hpp) a compiler process ran into: the
 * wall-clock or CPU time limit, its address space, its output file's size. `what` names the
 * process ("the C preprocessor", "the C++ compiler"); `scope` the backend ("cpu").
 */
void check_compiler_limits(const ProcessResult& result, const CompileLimits& limits, const std::string& what,
                           const std::string& scope);

/** A compile log in clang/g++ form ("file:line:col: error: msg") as Diagnostics. */
std::vector<msl::Diagnostic> parse_gnu_diagnostics(const std::string& log);

}  // namespace metalcall::translated
