// Constants converted to a template type parameter or half, for CUDA (see literal_casts.hpp).
#include "msl/passes/literal_casts.hpp"

#include <set>

namespace metalcall::msl {

namespace {

bool punct(const std::vector<Token>& t, std::size_t i, const char* s) {
  return i < t.size() && t[i].kind == TokenKind::punct && t[i].is(s);
}

// The names of every template type parameter (`template <typename T, class U = int>`).
std::set<std::string> template_type_parameters(const std::vector<Token>& t) {
  std::set<std::string> names;
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (!t[i].is_identifier("template") || !punct(t, i + 1, "<")) continue;
    int depth = 0;
    for (std::size_t j = i + 1; j < t.size(); ++j) {
      if (t[j].is("<") || t[j].is("(")) ++depth;
      else if (t[j].is(")")) --depth;
      else if (t[j].is(">")) {
        if (--depth == 0) break;
      } else if (t[j].is(">>")) {
        if ((depth -= 2) <= 0) break;
      } else if (depth == 1 && (t[j].is_identifier("typename") || t[j].is_identifier("class"))) {
        std::size_t k = j + 1;
        if (punct(t, k, "...")) ++k;
        if (k < t.size() && t[k].kind == TokenKind::identifier) names.insert(t[k].text);
      }
    }
  }
  return names;
}

// The index after `( lit )` or `( -lit )` starting at the `(` at i, or 0.
std::size_t literal_argument_end(const std::vector<Token>& t, std::size_t i) {
  if (!punct(t, i, "(")) return 0;
  std::size_t k = i + 1;
  if (punct(t, k, "-")) ++k;
  if (k >= t.size() || t[k].kind != TokenKind::number || !punct(t, k + 1, ")")) return 0;
  return k + 2;
}

// The index after a parenthesised argument `( ... )` starting at the `(` at i (balanced, no
// comma outside nested brackets), or 0.
std::size_t any_argument_end(const std::vector<Token>& t, std::size_t i) {
  if (!punct(t, i, "(")) return 0;
  int depth = 0;
  for (std::size_t k = i; k < t.size(); ++k) {
    if (t[k].is("(") || t[k].is("[") || t[k].is("{")) ++depth;
    else if (t[k].is(")") || t[k].is("]") || t[k].is("}")) {
      if (--depth == 0) return k > i + 1 ? k + 1 : 0;
    } else if (depth == 1 && t[k].is(",")) return 0;
  }
  return 0;
}


// The index of the `}` that closes the brace at i, or 0; `elements` gets the number of elements
// at its top level.
std::size_t brace_end(const std::vector<Token>& t, std::size_t i, std::size_t& elements) {
  int depth = 0;
  elements = 0;
  const auto closing = [&](std::size_t k) { return t[k].is(")") || t[k].is("]") || t[k].is("}"); };
  for (std::size_t k = i; k < t.size(); ++k) {
    if (k == i + 1 && !closing(k)) elements = 1;
    if (t[k].is("(") || t[k].is("[") || t[k].is("{")) ++depth;
    else if (closing(k)) {
      if (--depth == 0) return k;
    } else if (depth == 1 && t[k].is(",") && k + 1 < t.size() && !closing(k + 1)) {
      ++elements;
    }
  }
  return 0;
}

// The components of a half vector type name (half2, packed_half4), or 0.
int half_vector_size(const Token& x) {
  if (x.kind != TokenKind::identifier) return 0;
  std::string n = x.text;
  if (n.rfind("packed_", 0) == 0) n = n.substr(7);
  return n.size() == 5 && n.compare(0, 4, "half") == 0 && n[4] >= '2' && n[4] <= '4' ? n[4] - '0' : 0;
}

// `constexpr constant half2 table[N] = { {a, b}, ... };` and `constant half2 v = {a, b};`:
// each braced list of the vector's components written as the vector's constructor call,
// `mtl_half2(a, b)`. On CUDA a half vector's braced list is an initializer_list of float
// (metal_vector.h: NVRTC 13 crashes on one of a class type), and a half element converts to
// float through __half's conversion operator, which is not constexpr (ik_llama's
// kvalues_iq2kl_h); the constructor converts each component constexpr. A shorter list zeroes
// the rest, as MSL's does (`{x}` is `mtl_half4(x, 0, 0, 0)`).
void half_vector_list_edits(const std::vector<Token>& t, std::string (*renamed)(const std::string&),
                            std::map<std::size_t, std::string>& edits) {
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (!t[i].is_identifier("constexpr") && !t[i].is_identifier("constant")) continue;
    std::size_t k = i + 1;
    while (k < t.size() && t[k].kind == TokenKind::identifier && half_vector_size(t[k]) == 0 &&
           (t[k].is("static") || t[k].is("const") || t[k].is("constant") || t[k].is("constexpr") || t[k].is("metal")))
      ++k;
    if (punct(t, k, "::")) ++k;
    const int n = k < t.size() ? half_vector_size(t[k]) : 0;
    if (n == 0 || k + 2 >= t.size() || t[k + 1].kind != TokenKind::identifier) continue;
    std::size_t at = k + 2, dims = 0;
    for (std::size_t elements; punct(t, at, "["); ++dims) at = brace_end(t, at, elements) + 1;
    if (!punct(t, at, "=") || !punct(t, at + 1, "{")) continue;
    const std::string type = renamed(t[k].text);
    // The lists `dims` braces deep are the vectors.
    std::vector<std::size_t> lists{at + 1};
    for (std::size_t level = 0; level < dims; ++level) {
      std::vector<std::size_t> inner;
      for (std::size_t open : lists) {
        std::size_t elements, close = brace_end(t, open, elements);
        for (std::size_t j = open + 1; j < close; ++j)
          if (t[j].is("{")) {
            inner.push_back(j);
            j = brace_end(t, j, elements);
          } else if (t[j].is("(") || t[j].is("[")) {
            j = brace_end(t, j, elements);
          }
      }
      lists = inner;
    }
    for (std::size_t open : lists) {
      std::size_t elements, close = brace_end(t, open, elements);
      if (close == 0 || elements == 0 || elements > static_cast<std::size_t>(n)) continue;
      edits[open] = type + "(";
      edits[close] = ")";
      for (std::size_t zero = elements; zero < static_cast<std::size_t>(n); ++zero) edits[close] = ", 0" + edits[close];
    }
    i = at;
  }
}

}  // namespace

std::map<std::size_t, std::string> literal_cast_edits(const std::vector<Token>& t,
                                                      std::string (*renamed)(const std::string&)) {
  const std::set<std::string> types = template_type_parameters(t);
  auto is_target = [&](std::size_t i) {
    return t[i].kind == TokenKind::identifier && (t[i].text == "half" || types.count(t[i].text));
  };
  // half(x) of any x (`constant half h = half(INFINITY);`): literal_cast<__half> converts
  // arithmetic values in constant evaluation and is __half(x) otherwise. A template type
  // parameter may be a class, so U(x) is rewritten only for a literal x.
  auto argument_end = [&](std::size_t name, std::size_t open) {
    return t[name].text == "half" ? any_argument_end(t, open) : literal_argument_end(t, open);
  };
  std::map<std::size_t, std::string> edits;
  for (std::size_t i = 0; i + 3 < t.size(); ++i) {
    // static_cast<N>(lit)
    if (t[i].is_identifier("static_cast") && punct(t, i + 1, "<") && is_target(i + 2) && punct(t, i + 3, ">") &&
        argument_end(i + 2, i + 4)) {
      edits[i] = "metal::mtl_rt::literal_cast<" + renamed(t[i + 2].text) + ">::from";
      edits[i + 1] = edits[i + 2] = edits[i + 3] = "";
      i += 3;
      continue;
    }
    // N(lit): not a declaration or a member (`U x(0)`, `a.U(0)`, `A::U(0)`, `~U(0)`).
    if (is_target(i) && argument_end(i, i + 1)) {
      if (i > 0 && ((t[i - 1].kind == TokenKind::identifier && !t[i - 1].is("return")) || punct(t, i - 1, ".") || punct(t, i - 1, "->") ||
                    punct(t, i - 1, "::") || punct(t, i - 1, "~") || punct(t, i - 1, ">")))
        continue;
      edits[i] = "metal::mtl_rt::literal_cast<" + renamed(t[i].text) + ">::from";
    }
  }
  half_vector_list_edits(t, renamed, edits);
  return edits;
}

std::vector<ConstexprInitializer> constexpr_initializers(const std::vector<Token>& t,
                                                         std::string (*renamed)(const std::string&)) {
  const std::set<std::string> types = template_type_parameters(t);
  static const auto& before_type = *new std::set<std::string>{"static", "const", "constant", "constexpr", "thread",
                                                               "threadgroup", "device", "inline"};
  std::vector<ConstexprInitializer> found;
  for (std::size_t i = 0; i < t.size(); ++i) {
    // constexpr, or constant: program-scope constant data is constexpr on CUDA (Target::constant_data_constexpr).
    if (!t[i].is_identifier("constexpr") && !t[i].is_identifier("constant")) continue;
    std::size_t k = i + 1;
    while (k < t.size() && t[k].kind == TokenKind::identifier && before_type.count(t[k].text)) ++k;
    if (k + 3 >= t.size() || t[k].kind != TokenKind::identifier ||
        !(t[k].text == "half" || types.count(t[k].text)) || t[k + 1].kind != TokenKind::identifier ||
        !punct(t, k + 2, "=") || punct(t, k + 3, "{"))
      continue;
    std::size_t end = k + 3;
    int depth = 0;
    bool several = false;
    for (; end < t.size(); ++end) {
      if (t[end].is("(") || t[end].is("[") || t[end].is("{")) ++depth;
      else if (t[end].is(")") || t[end].is("]") || t[end].is("}")) --depth;
      else if (depth == 0 && t[end].is(",")) several = true;
      else if (depth == 0 && t[end].is(";")) break;
      if (depth < 0) break;
    }
    if (end >= t.size() || !t[end].is(";") || several || end == k + 3) continue;
    // `N(lit)` and `static_cast<N>(lit)` alone are literal_cast_edits' already.
    const std::size_t b = k + 3;
    const bool cast = t[b].kind == TokenKind::identifier && (t[b].text == "half" || types.count(t[b].text)) &&
                      literal_argument_end(t, b + 1) == end;
    const bool static_cast_of_literal = t[b].is_identifier("static_cast") && punct(t, b + 1, "<") &&
                                        punct(t, b + 3, ">") && literal_argument_end(t, b + 4) == end;
    if (cast || static_cast_of_literal) continue;
    found.push_back({b, end, renamed(t[k].text)});
    i = end;
  }
  return found;
}

}  // namespace metalcall::msl
