// Runs a program and captures what it prints (stdout and stderr together), under limits.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace metalcall::translated {

/** Bounds on one run; 0 lifts each. */
struct ProcessLimits {
  double wall_seconds = 0;          // killed (SIGKILL) after this long; its children's CPU time is capped alike
  std::uint64_t address_space = 0;  // RLIMIT_AS of it and its children (Linux)
  std::uint64_t file_bytes = 0;     // RLIMIT_FSIZE: the largest file it may write (Linux); SIGXFSZ beyond
  // Not 0: its standard output is kept apart (ProcessResult::standard_output), and it is killed
  // when that grows past this many bytes.
  std::uint64_t standard_output_bytes = 0;
};

struct ProcessResult {
  int exit_code = -1;      // -1 when it could not be started or was ended by a signal
  int signal = 0;          // the signal that ended it, 0 if it exited
  bool timed_out = false;  // killed at limits.wall_seconds
  bool output_overflow = false;  // killed when its standard output passed limits.standard_output_bytes
  std::string output;      // what it printed (its diagnostics), at most kMaxProcessOutput bytes
  std::string standard_output;  // with limits.standard_output_bytes: its standard output
};

/** Output kept per run: a compiler that prints more (a flood of warnings) is cut. */
constexpr std::size_t kMaxProcessOutput = std::size_t(4) << 20;

/** Runs argv[0] found on PATH (or by path) with argv, this process's environment but for the
 *  `environment` pairs (name, value) given; never throws for a failing program. */
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessLimits& limits = {},
                          const std::vector<std::pair<std::string, std::string>>& environment = {});

/** The full path of `program` on PATH (or `program` itself if it is a path that exists); "" if none. */
std::string find_program(const std::string& program);

/** A failed compiler's output that says it ran out of memory (under the address-space limit, usually). */
bool ran_out_of_memory(const ProcessResult& result);

}  // namespace metalcall::translated
