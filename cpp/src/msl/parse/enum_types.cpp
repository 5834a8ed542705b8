// Enumerations and their underlying integer types, so that a kernel parameter of an enum type
// (`constant Mode& m`, `Mode m`, `device const Mode* modes`) binds as that integer type does: a
// Python int range-checked against it, an array checked against its dtype. Before 2026-12-05 an
// enum parameter took no Python int, and any array of its size bound unchecked.
#include <cstdlib>

#include "msl/parse/signature_walk.hpp"

namespace metalcall::msl {

namespace {

// The underlying type clang (Metal's compiler) gives an unscoped enum without a fixed one, as
// far as the tokens of its enumerator list `{ ... }` tell: unsigned int when no enumerator can be
// negative (Itanium C++ ABI: `enum E { A, B }` is unsigned int), int when one may be (a minus or
// a complement in a value); empty (left as bytes) when a value may need more than 32 bits.
std::string unfixed_underlying(const std::vector<Token>& t, std::size_t open, std::size_t close) {
  bool negative = false;
  for (std::size_t k = open + 1; k < close; ++k) {
    if (t[k].is("-") || t[k].is("~")) negative = true;
    if (t[k].kind != TokenKind::number) continue;
    const unsigned long long v = std::strtoull(t[k].text.c_str(), nullptr, 0);
    const bool shifted = k > 0 && t[k - 1].is("<<");
    if (v > 0xffffffffull || (shifted && v >= 31)) return {};  // long or ulong, or not known here
  }
  return negative ? "int" : "uint";
}

}  // namespace

void SignatureParser::collect_enums() {
  auto record = [this](const std::string& name, const std::string& underlying) {
    const auto [it, added] = enums_.emplace(name, underlying);
    if (!added && it->second != underlying) it->second = kAmbiguousAlias;  // two enums of one name
  };
  for (std::size_t i = 0; i + 1 < t_.size(); ++i) {
    if (!t_[i].is_identifier("enum")) continue;
    const bool scoped = t_[i + 1].is_identifier("class") || t_[i + 1].is_identifier("struct");
    std::size_t k = scoped ? i + 2 : i + 1;
    if (k + 1 < t_.size() && t_[k].is("[") && t_[k + 1].is("[")) k = matching(k, "[", "]") + 1;  // [[attributes]]
    std::string name;
    if (k < t_.size() && t_[k].kind == TokenKind::identifier) name = t_[k++].text;
    std::string fixed;  // `: uint`, `: metal::uint8_t`, `: unsigned short`
    if (k < t_.size() && t_[k].is(":")) {
      for (++k; k < t_.size() && !t_[k].is("{") && !t_[k].is(";"); ++k) {
        if (t_[k].is_identifier("metal") || t_[k].is("::")) continue;
        fixed += (fixed.empty() ? "" : " ") + t_[k].text;
      }
    }
    if (k >= t_.size() || (!t_[k].is("{") && !t_[k].is(";"))) continue;  // `enum E e;`: a use, not a declaration
    std::string underlying = !fixed.empty() ? resolve_alias(fixed) : scoped ? "int" : std::string();
    std::size_t end = k;
    if (t_[k].is("{")) {
      end = matching(k, "{", "}");
      if (fixed.empty() && !scoped) underlying = unfixed_underlying(t_, k, end);
    } else if (fixed.empty() && !scoped) {
      continue;  // an opaque unscoped declaration needs a fixed type
    }
    if (underlying.empty()) continue;
    if (!name.empty()) record(name, underlying);
    // `typedef enum { A, B } Mode;` (C's spelling): the name after the list names it too.
    if (i > 0 && t_[i - 1].is_identifier("typedef") && t_[k].is("{") && end + 1 < t_.size() &&
        t_[end + 1].kind == TokenKind::identifier)
      record(t_[end + 1].text, underlying);
  }
}

std::string SignatureParser::enum_underlying(const std::string& type) const {
  auto find = [this](std::string name) -> std::string {
    if (name.rfind("enum ", 0) == 0) name = name.substr(5);  // `constant enum Mode& m`
    auto it = enums_.find(name);
    const std::size_t colons = name.rfind("::");  // `ns::Mode`, `Outer::Mode`: as resolve_alias does
    if (it == enums_.end() && colons != std::string::npos) it = enums_.find(name.substr(colons + 2));
    return it == enums_.end() ? std::string() : it->second;  // kAmbiguousAlias is empty too
  };
  // The name itself first: `typedef enum { A } Mode;` is also an alias of `enum { A }`.
  const std::string direct = find(type);
  return direct.empty() ? find(resolve_alias(type)) : direct;
}

}  // namespace metalcall::msl
