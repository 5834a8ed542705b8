// The MSL prelude (cpp/src/msl/prelude/*.h), embedded at build time by CMake
// (translated.cmake): the CPU backend writes it to disk for its compiler, the
// CUDA backend hands it to NVRTC as headers.
#pragma once

#include <cstddef>
#include <string>

namespace metalcall::translated {

struct EmbeddedFile {
  const char* name;
  const char* text;
};

extern const EmbeddedFile kEmbeddedPrelude[];
extern const std::size_t kEmbeddedPreludeCount;

/** A hash of the embedded prelude's names and texts (computed once). */
const std::string& embedded_prelude_hash();

}  // namespace metalcall::translated
