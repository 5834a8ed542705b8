// Vector sizes deduced into int (vector_size_parameters.hpp).
#include "msl/passes/vector_size_parameters.hpp"

#include <set>
#include <string>

namespace metalcall::msl {

namespace {

// The integer types other than int a template parameter is declared with (one or more words).
bool integer_word(const Token& tok) {
  static const auto& words = *new std::set<std::string>{"uint", "ushort", "ulong", "uchar", "unsigned", "short",
                                                       "long", "char", "size_t", "uint32_t", "uint16_t", "uint64_t",
                                                       "int32_t", "int16_t", "int64_t", "uint8_t", "int8_t", "signed",
                                                       "int"};
  return tok.kind == TokenKind::identifier && words.count(tok.text) > 0;
}

// The closing `>` of the template parameter list opening at `open` (its `<`), or t.size().
std::size_t list_end(const std::vector<Token>& t, std::size_t open) {
  int angle = 0, paren = 0;
  for (std::size_t j = open; j < t.size(); ++j) {
    if (t[j].is("(")) ++paren;
    else if (t[j].is(")")) --paren;
    else if (paren == 0 && t[j].is("<")) ++angle;
    else if (paren == 0 && t[j].is(">") && --angle == 0) return j;
    else if (paren == 0 && t[j].is(">>") && (angle -= 2) <= 0) return j;  // closes this list (and one around it)
    else if (t[j].is(";") || t[j].is("{")) return t.size();
  }
  return t.size();
}

// True when `vec < ... , name >` (or packed_vec) appears in [from, to): name as the size.
bool names_as_vector_size(const std::vector<Token>& t, std::size_t from, std::size_t to, const std::string& name) {
  for (std::size_t j = from; j + 3 < to; ++j) {
    if (!(t[j].is_identifier("vec") || t[j].is_identifier("packed_vec")) || !t[j + 1].is("<")) continue;
    const std::size_t close = list_end(t, j + 1);
    if (close < to && t[close - 1].is_identifier(name.c_str()) && t[close - 2].is(",")) return true;
  }
  return false;
}

}  // namespace

void int_vector_size_parameters(std::vector<Token>& t) {
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (!t[i].is_identifier("template") || !t[i + 1].is("<")) continue;
    const std::size_t close = list_end(t, i + 1);
    if (close >= t.size()) continue;
    // The declaration's head: up to its body or its end. Class templates deduce nothing here,
    // but for their partial specializations (`template <uint N> struct S<vec<float, N>>`,
    // SPIRV-Cross's SpvHalfTypeSelector: NVRTC refuses to deduce an int into that uint).
    std::size_t head = close + 1;
    const bool type = head < t.size() && (t[head].is_identifier("struct") || t[head].is_identifier("class") ||
                                          t[head].is_identifier("union"));
    if (head < t.size() && (t[head].is_identifier("using") || (type && !(head + 2 < t.size() && t[head + 2].is("<")))))
      continue;
    while (head < t.size() && !t[head].is("{") && !t[head].is(";")) ++head;
    // Each parameter: the integer words before its name (and no default, `=`, before them).
    std::vector<std::pair<std::size_t, std::size_t>> retype;  // [first word, name)
    std::size_t start = i + 2;
    for (std::size_t j = start; j <= close; ++j) {
      if (!(t[j].is(",") || j == close)) continue;
      std::size_t k = start;
      while (k < j && integer_word(t[k])) ++k;
      const bool only_int = k == start + 1 && t[start].is_identifier("int");
      if (k > start && k < j && t[k].kind == TokenKind::identifier && !only_int &&
          names_as_vector_size(t, close + 1, head, t[k].text))
        retype.push_back({start, k});
      start = j + 1;
    }
    // Back to front, so that earlier positions stay valid.
    for (auto r = retype.rbegin(); r != retype.rend(); ++r) {
      t[r->first].text = "int";
      t.erase(t.begin() + static_cast<std::ptrdiff_t>(r->first + 1), t.begin() + static_cast<std::ptrdiff_t>(r->second));
    }
  }
}

}  // namespace metalcall::msl
