// MSL type names renamed to mtl_<name> for the targets, and back in compiler messages.
#include "msl/parse/type_names.hpp"

#include <cctype>
#include <unordered_set>

namespace metalcall::msl {

namespace {
std::unordered_set<std::string> build_names() {
  std::unordered_set<std::string> names = {"uchar", "ushort", "uint", "ulong", "half", "bfloat"};
  const char* scalars[] = {"bool", "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "half", "float", "bfloat"};
  for (const char* s : scalars) {
    for (int n = 2; n <= 4; ++n) {
      names.insert(std::string(s) + std::to_string(n));
      names.insert("packed_" + std::string(s) + std::to_string(n));
    }
  }
  for (const char* s : {"float", "half", "bfloat"})
    for (int c = 2; c <= 4; ++c)
      for (int r = 2; r <= 4; ++r) names.insert(std::string(s) + std::to_string(c) + "x" + std::to_string(r));
  return names;
}
}  // namespace

bool is_renamed_type(const std::string& identifier) {
  static const auto& names = *new std::unordered_set<std::string>(build_names());
  return names.count(identifier) != 0;
}

bool is_trailing_return_arrow(const std::vector<Token>& t, std::size_t arrow) {
  if (arrow >= t.size() || !t[arrow].is("->")) return false;
  std::size_t k = arrow;
  while (k > 0 && (t[k - 1].is_identifier("const") || t[k - 1].is_identifier("mutable") ||
                   t[k - 1].is_identifier("noexcept") || t[k - 1].is_identifier("constexpr")))
    --k;
  if (k == 0 || !t[k - 1].is(")")) return false;
  int depth = 0;
  std::size_t open = k - 1;
  for (;; --open) {  // back to the `(` that the `)` closes
    if (t[open].is(")")) ++depth;
    if (t[open].is("(") && --depth == 0) break;
    if (open == 0) return false;
  }
  if (open == 0) return false;
  const Token& before = t[open - 1];
  if (before.is("]") || before.is(">")) return true;  // [&](...) ->, []<class T>(...) ->
  return before.kind == TokenKind::identifier && open >= 2 && t[open - 2].is_identifier("auto");
}

std::string restore_type_names(const std::string& message) {
  std::string out;
  out.reserve(message.size());
  for (std::size_t i = 0; i < message.size();) {
    const bool boundary = i == 0 || !(std::isalnum(static_cast<unsigned char>(message[i - 1])) || message[i - 1] == '_');
    if (boundary && message.compare(i, 9, "mtl_user_") == 0) {
      i += 9;
      continue;
    }
    if (boundary && message.compare(i, 4, "mtl_") == 0) {
      std::size_t j = i + 4;
      while (j < message.size() && (std::isalnum(static_cast<unsigned char>(message[j])) || message[j] == '_')) ++j;
      if (is_renamed_type(message.substr(i + 4, j - i - 4))) {
        i += 4;
        continue;
      }
    }
    out += message[i++];
  }
  return out;
}

}  // namespace metalcall::msl
