// The MSL prelude (cpp/src/msl/prelude/*.h), embedded at build time by CMake
// (translated.cmake): the CPU backend writes it to disk for its compiler, the
// CUDA backend hands it to NVRTC as headers.
#pragma once

#include <cstddef>

namespace metalcall::translated {

struct EmbeddedFile {
  const char* name;
  const char* text;
};

extern const EmbeddedFile kEmbeddedPrelude[];
extern const std::size_t kEmbeddedPreludeCount;

}  // namespace metalcall::translated
