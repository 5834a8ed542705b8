// Bounds on one compile, so that a source cannot take the process's memory or time
// (docs/design.md, "Compile limits"): the source's size, the preprocessed text's size,
// and the time and memory of each compiler process the translated backends run (the
// preprocessor, the C++ compiler). Each has a default and an environment variable; 0 in
// the variable lifts that limit. Exceeding one is a CompileError that names it.
#pragma once

#include <cstdint>
#include <string>

namespace metalcall {

struct CompileLimits {
  std::uint64_t source_bytes;        // METALCALL_MAX_SOURCE_BYTES (default 16 MiB)
  std::uint64_t preprocessed_bytes;  // METALCALL_MAX_PREPROCESSED_BYTES (default 32 MiB)
  double compiler_seconds;           // METALCALL_COMPILE_TIMEOUT: wall time of each compiler process (default 300 s)
  std::uint64_t compiler_memory;     // METALCALL_COMPILER_MEMORY: address space of each (default 8 GiB; Linux)

  /** The defaults with the environment's overrides, read now (a bad value is a CompileError). */
  static CompileLimits current();
};

/** CompileError when `source` is over the limit (checked before any backend sees it). */
void check_source_size(const std::string& source);

/** "the limit of 32 MiB (METALCALL_MAX_PREPROCESSED_BYTES)": for messages. */
std::string describe_limit(std::uint64_t bytes, const char* variable);

}  // namespace metalcall
