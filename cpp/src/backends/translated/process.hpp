// Runs a program and captures what it prints (stdout and stderr together).
#pragma once

#include <string>
#include <vector>

namespace metalcall::translated {

struct ProcessResult {
  int exit_code = -1;   // -1 when it could not be started or was killed
  std::string output;
};

/** Runs argv[0] found on PATH (or by path) with argv; never throws for a failing program. */
ProcessResult run_process(const std::vector<std::string>& argv);

/** The full path of `program` on PATH (or `program` itself if it is a path that exists); "" if none. */
std::string find_program(const std::string& program);

}  // namespace metalcall::translated
