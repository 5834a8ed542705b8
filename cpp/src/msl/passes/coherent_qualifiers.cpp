// `coherent` before an address space left out (coherent_qualifiers.hpp).
#include "msl/passes/coherent_qualifiers.hpp"

#include <algorithm>

namespace metalcall::msl {

void drop_coherent_qualifiers(std::vector<Token>& t) {
  auto space = [](const Token& tok) {
    return tok.is_identifier("device") || tok.is_identifier("threadgroup") || tok.is_identifier("constant") ||
           tok.is_identifier("thread");
  };
  std::size_t kept = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i].is_identifier("coherent") && i + 1 < t.size() && space(t[i + 1])) continue;
    if (kept != i) t[kept] = std::move(t[i]);
    ++kept;
  }
  t.resize(kept);
}

}  // namespace metalcall::msl
