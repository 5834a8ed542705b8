// Precompiled heads for the CPU backend's builds with clang: the translator's part of a unit
// ahead of the user's code (its declarations and the #include of the prelude,
// msl::translation_head) compiled once per head, compiler and flags, and read by every build
// that shares them (`-include-pch`), the rest of the unit compiled as it is, its head blanked.
// Clang's front end spent about half of a kernel's compile on the prelude: 60 kernels of the
// test suite took 19.9 s one by one and 13.4 s with the header (clang 16, 2026-12-06). A
// header (~2.7 MB) carries the prelude's text (-fmodules-embed-all-files), so it needs no
// folder of it; it is kept by this process and in the disk cache's "cpu" area.
#pragma once

#include <string>
#include <vector>

#include "backends/translated/process.hpp"

namespace metalcall::cpu {

/** How a build compiles: the compiler's command and identity, the build's flags and limits. */
struct HeadCompiler {
  std::vector<std::string> command;  // HostCxx::compile_command()
  std::string identity;              // the compiler's (CpuCompiler's identity: compiler, CPU, translator, prelude)
  std::vector<std::string> flags;    // the build's own, as the unit is compiled with them
  translated::ProcessLimits limits;
};

/**
 * Writes into `folder` (a build's private one, holding the prelude at `prelude`) the
 * precompiled header of `head` for `compiler` and returns its path: this process's, the disk
 * cache's, or made now and stored. "" where none can be had (clang refused to make one: then
 * this process compiles that head's units whole): the build compiles the whole unit.
 */
std::string head_header_in(const std::string& folder, const std::string& prelude, const std::string& head,
                           const HeadCompiler& compiler);

/** Forgets the header of `head` for `compiler`: a build with it failed where the whole unit compiled. */
void forget_head_header(const std::string& head, const HeadCompiler& compiler);

}  // namespace metalcall::cpu
