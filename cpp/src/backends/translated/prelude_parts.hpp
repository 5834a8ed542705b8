// The parts of the MSL prelude a translated kernel needs (msl/prelude/metal_stdlib.h): NVRTC
// parses every header it is given the include of, about 0.2 s for the whole prelude, against
// 0.03 s for a kernel of float scalars with the headers every kernel needs. A part is in when the
// kernel's code spells a name the part declares (read from the headers' text at build time:
// prelude_parts_scan.hpp), with
// the parts it needs. The CUDA backend compiles with these options, and with the whole prelude
// again where that fails (cuda_compiler.cpp): a name missed here costs time, not a result.
#pragma once

#include <string>
#include <vector>

namespace metalcall::translated {

/**
 * The compiler options (-D...) that select the prelude parts `code` (a CUDA translation) needs;
 * empty where the whole prelude must be used (a header of the embedded prelude that no part
 * lists: a prelude newer than this table).
 */
std::vector<std::string> prelude_part_options(const std::string& code);

/** The part names of prelude_part_options(code), for tests and benchmarks ("HALF", "MATH"...). */
std::vector<std::string> prelude_parts(const std::string& code);

}  // namespace metalcall::translated
