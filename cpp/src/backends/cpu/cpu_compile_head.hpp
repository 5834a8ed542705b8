// Precompiled heads for the CPU backend's builds with clang: the translator's part of a unit
// ahead of the user's code (its declarations and the #include of the prelude,
// msl::translation_head) compiled once per head, compiler and flags, and read by every build
// that shares them (`-include-pch`), the rest of the unit compiled as it is, its head blanked.
// Clang's front end spent about half of a kernel's compile on the prelude: 60 kernels of the
// test suite took 19.9 s one by one and 13.4 s with the header (clang 16, 2026-12-06). A
// header (~2.8 MB) carries the prelude's text (-fmodules-embed-all-files), so it needs no
// folder of it; it is kept by this process and in the disk cache's "cpu" area. The first
// build of a head that has none compiles its whole unit while the header is made beside it,
// so a first compile waits for the longer of the two, not for both.
#pragma once

#include <string>
#include <thread>
#include <vector>

#include "backends/translated/process.hpp"

namespace metalcall::cpu {

/** How a build compiles: the compiler's command and identity, the build's flags and limits. */
struct HeadCompiler {
  std::vector<std::string> command;  // HostCxx::compile_command()
  std::string identity;              // CpuCompiler's identity: compiler, CPU, translator, prelude
  std::vector<std::string> flags;    // the build's own, as the unit is compiled with them
  translated::ProcessLimits limits;
};

/** The precompiled header one build reads, if any; made beside it when there is none yet. */
class HeadHeader {
 public:
  /**
   * Writes into `folder` (the build's private one, holding the prelude at `prelude`) the header
   * of `head` for `compiler`: this process's or the disk cache's. Where neither has one and no
   * other build is making it, starts making it (in a folder of `folder`, stored when made) and
   * the build compiles whole.
   */
  HeadHeader(const std::string& folder, const std::string& prelude, const std::string& head,
             const HeadCompiler& compiler);
  /** Waits for the header's making, if this build started it. */
  ~HeadHeader();
  HeadHeader(const HeadHeader&) = delete;
  HeadHeader& operator=(const HeadHeader&) = delete;

  /** The header's path for `-include-pch`; "" where the build compiles its whole unit. */
  const std::string& path() const { return path_; }
  /** The build failed with the header and compiled whole: this process compiles that head whole. */
  void failed();

 private:
  std::string key_, path_;
  std::thread maker_;
};

}  // namespace metalcall::cpu
