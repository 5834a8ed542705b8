// The embedded prelude's content hash: part of the compiler identity of both translated
// backends, so libraries cached by a build with another prelude are never loaded.
#include "backends/translated/embedded_prelude.hpp"
#include "core/hash.hpp"

namespace metalcall::translated {

const std::string& embedded_prelude_hash() {
  // Never destroyed: safe at exit (tests/reliability/test_exit_safe_statics.py).
  static const auto& hash = *new std::string([] {
    ContentHash h;
    for (std::size_t i = 0; i < kEmbeddedPreludeCount; ++i) h.add(kEmbeddedPrelude[i].name).add(kEmbeddedPrelude[i].text);
    return h.hex();
  }());
  return hash;
}

}  // namespace metalcall::translated
