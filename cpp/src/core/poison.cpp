// METALCALL_POISON_UNINITIALIZED (core/backend.hpp's poison_uninitialized reads it once). Its own
// file: the sandbox's worker links it beside the CPU dispatch, whose launches ask it (with an
// environment of its own, the worker's answer is no; the parent sends its answer with each call).
#include <cstdlib>

#include "core/backend.hpp"

namespace metalcall {

bool poison_uninitialized_in_environment() {
  const char* env = std::getenv("METALCALL_POISON_UNINITIALIZED");
  return env && env[0] == '1' && env[1] == '\0';
}

}  // namespace metalcall
