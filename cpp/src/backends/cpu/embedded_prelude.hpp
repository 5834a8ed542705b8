// The MSL prelude (cpp/src/msl/prelude/*.h), embedded at build time by CMake.
#pragma once

#include <cstddef>

namespace metalcall::cpu {

struct EmbeddedFile {
  const char* name;
  const char* text;
};

extern const EmbeddedFile kEmbeddedPrelude[];
extern const std::size_t kEmbeddedPreludeCount;

}  // namespace metalcall::cpu
