// The CPU backend's compiler: translated MSL → host C++ → a shared object built by
// the system C++ compiler (translated/host_cxx), cached on disk; and the programs
// loaded from it.
#pragma once

#include <memory>
#include <string>

#include "backends/cpu/cpu_program.hpp"
#include "core/backend.hpp"
#include "msl/translate/front_end.hpp"
#include "msl/translate/translator.hpp"

namespace metalcall::cpu {

class CpuCompiler {
 public:
  /** The process-wide compiler (found once). */
  static CpuCompiler& instance();

  bool available() const;
  /** Compiler, version, target flags and CPU: part of every cache key ("none" without a compiler). */
  const std::string& identity() const { return identity_; }

  /**
   * Builds `translation` into a shared object and returns its bytes, from the disk
   * cache when it is there (checked: see disk_cache.hpp). Throws CompileError (mapped to the user's `source`) or
   * DeviceError when there is no compiler. A checked translation builds at -O1 (see build()).
   */
  std::string build(const msl::Translation& translation, const std::string& source, bool fast_math, bool checked);

 private:
  CpuCompiler();
  /** Writes the MSL prelude headers into `folder` (inside this build's private folder); false if it cannot. */
  static bool write_prelude(const std::string& folder);

  std::string identity_;
};

/**
 * The front end's options for a CPU compile (the in-process and the sandboxed device alike: a
 * compile option that reaches one must reach the other).
 */
msl::FrontEndOptions cpu_front_end_options(const CompileOptions& options, bool checked);

/** The program of `kernel` in a loaded module: entry point, layout and limits. */
std::shared_ptr<Program> load_program(const msl::TranslatedKernel& kernel, const std::shared_ptr<CpuModule>& module,
                                      bool checked);

}  // namespace metalcall::cpu
