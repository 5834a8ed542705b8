// What the translator learns from the token stream before it writes anything
// (see source_analysis.hpp).
#include "msl/analysis/source_analysis.hpp"

#include <set>

#include "msl/lex/token_text.hpp"

namespace metalcall::msl {

namespace {

// Calls that make a kernel run its threads as fibers: every thread of the group
// (or SIMD-group) must be able to wait for the others. SIMD-group matrices
// (simdgroup_*, thread_elements) need each lane's index in its group and exchange
// values between lanes (metal_simdgroup_matrix.h).
bool is_sync_call(const std::string& id) {
  static const auto& names = *new std::set<std::string>{
      "threadgroup_barrier", "simdgroup_barrier", "simdgroup_load", "simdgroup_store", "simdgroup_multiply",
      "simdgroup_multiply_accumulate", "make_filled_simdgroup_matrix", "thread_elements", "simdgroup_matrix",
      "simdgroup_float8x8", "simdgroup_half8x8", "simdgroup_bfloat8x8"};
  return names.count(id) != 0 || id.rfind("simd_", 0) == 0 || id.rfind("quad_", 0) == 0 ||
         id.rfind("__metal_simd_", 0) == 0 || id == "__metal_get_thread_index_in_simdgroup";
}

}  // namespace

std::map<std::size_t, std::string> swizzle_member_accessors(const std::vector<Token>& t) {
  std::map<std::size_t, std::string> struct_accessors;  // closing brace → accessors
  std::vector<int> code;
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (!(t[i].is_identifier("struct") || t[i].is_identifier("class") || t[i].is_identifier("union"))) continue;
    std::size_t open = i + 1;
    while (open < t.size() && !t[open].is("{") && !t[open].is(";") && !t[open].is("(")) ++open;
    if (open >= t.size() || !t[open].is("{")) continue;
    int depth = 0;
    std::vector<std::string> swizzle_members;
    std::size_t close = open;
    for (std::size_t j = open; j < t.size(); ++j) {
      if (t[j].is("{")) ++depth;
      else if (t[j].is("}") && --depth == 0) {
        close = j;
        break;
      } else if (depth == 1 && t[j].kind == TokenKind::identifier && j + 1 < t.size() &&
                 (t[j + 1].is(";") || t[j + 1].is(",") || t[j + 1].is("[") || t[j + 1].is("=") ||
                  t[j + 1].is(":")) &&
                 is_swizzle(t[j].text, &code)) {
        swizzle_members.push_back(t[j].text);
      }
    }
    if (swizzle_members.empty()) continue;
    std::string accessors;
    for (const char* qualifier : {"", "const "}) {
      accessors += std::string(" template <int mtl_code> ") + qualifier + "auto& mtl_swz() " + qualifier + "{";
      for (const auto& m : swizzle_members) {
        is_swizzle(m, &code);
        accessors += " if constexpr (mtl_code == " + swizzle_code(code) + ") return " + m + "; else";
      }
      accessors += " return *this; }";
    }
    accessors += " template <int mtl_code> auto& mtl_swz_ref() { return mtl_swz<mtl_code>(); }";
    struct_accessors[close] = accessors;
  }
  return struct_accessors;
}

// Function bodies are found as `name ( ... ) ... {`; a name defined several times
// (overloads) merges.
std::vector<bool> fiber_kernels(const std::vector<Token>& t, const std::vector<ParsedKernel>& kernels) {
  std::map<std::string, std::set<std::string>> calls;  // function → identifiers in its body
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (!t[i].is("{") || i == 0) continue;
    std::size_t j = i - 1;
    while (j > 0 && (t[j].is_identifier("const") || t[j].is_identifier("noexcept") || t[j].is("]"))) {
      if (t[j].is("]")) {  // skip trailing attributes
        int depth = 0;
        while (j > 0) {
          if (t[j].is("]")) ++depth;
          else if (t[j].is("[") && --depth == 0) break;
          --j;
        }
      }
      --j;
    }
    if (!t[j].is(")")) continue;
    int depth = 0;
    while (j > 0) {
      if (t[j].is(")")) ++depth;
      else if (t[j].is("(") && --depth == 0) break;
      --j;
    }
    if (j == 0 || t[j - 1].kind != TokenKind::identifier) continue;
    const std::string& name = t[j - 1].text;
    if (name == "if" || name == "for" || name == "while" || name == "switch" || name == "catch") continue;
    int body_depth = 0;
    std::size_t k = i;
    for (; k < t.size(); ++k) {
      if (t[k].is("{")) ++body_depth;
      else if (t[k].is("}") && --body_depth == 0) break;
      else if (t[k].kind == TokenKind::identifier) calls[name].insert(t[k].text);
    }
    i = k;  // nested functions do not exist; lambdas count as their enclosing function
  }
  // Macros count as functions: `#define SYNC() threadgroup_barrier(...)`.
  for (const Token& directive : t) {
    if (directive.kind != TokenKind::directive) continue;
    std::size_t p = directive.text.find_first_not_of(" \t", 1);
    if (p == std::string::npos || directive.text.compare(p, 6, "define") != 0) continue;
    std::vector<std::string> words;
    for (std::size_t i = p + 6; i < directive.text.size();) {
      if (is_word_char(directive.text[i]) && !std::isdigit(static_cast<unsigned char>(directive.text[i]))) {
        std::size_t j = i;
        while (j < directive.text.size() && is_word_char(directive.text[j])) ++j;
        words.push_back(directive.text.substr(i, j - i));
        i = j;
      } else {
        ++i;
      }
    }
    if (words.empty()) continue;
    for (std::size_t w = 1; w < words.size(); ++w) calls[words[0]].insert(words[w]);
  }
  std::set<std::string> syncing;
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& [name, ids] : calls) {
      if (syncing.count(name)) continue;
      for (const auto& id : ids) {
        if (is_sync_call(id) || syncing.count(id)) {
          syncing.insert(name);
          changed = true;
          break;
        }
      }
    }
  }
  std::vector<bool> uses_fibers;
  for (const auto& k : kernels) {
    bool fibers = false;
    for (std::size_t i = k.body_open; i < k.body_close && !fibers; ++i)
      fibers = t[i].kind == TokenKind::identifier && (is_sync_call(t[i].text) || syncing.count(t[i].text));
    uses_fibers.push_back(fibers);
  }
  return uses_fibers;
}

std::vector<std::string> qualified_kernel_names(const std::vector<Token>& t, const std::vector<ParsedKernel>& kernels) {
  std::vector<std::string> names;
  std::size_t next_kernel = 0;
  std::vector<std::string> stack;   // the open namespaces' names
  std::vector<std::size_t> closes;  // and their closing braces
  for (std::size_t i = 0; i < t.size() && next_kernel < kernels.size(); ++i) {
    while (!closes.empty() && i > closes.back()) {
      closes.pop_back();
      stack.pop_back();
    }
    if (t[i].is_identifier("namespace") && i + 1 < t.size()) {
      std::size_t j = i + 1;
      std::string name;
      while (j < t.size() && !t[j].is("{") && !t[j].is(";") && !t[j].is("=")) name += t[j++].text;
      if (j < t.size() && t[j].is("{")) {
        int depth = 0;
        std::size_t k = j;
        for (; k < t.size(); ++k) {
          if (t[k].is("{")) ++depth;
          else if (t[k].is("}") && --depth == 0) break;
        }
        stack.push_back(name);
        closes.push_back(k);
        i = j;
      }
      continue;
    }
    if (i == kernels[next_kernel].keyword_token) {
      std::string q;
      for (const auto& s : stack)
        if (!s.empty()) q += s + "::";
      names.push_back(q + kernels[next_kernel].function_name);
      ++next_kernel;
    }
  }
  while (names.size() < kernels.size()) names.push_back(kernels[names.size()].function_name);
  return names;
}

bool defines_static_member(const std::vector<Token>& t, std::size_t i) {
  int depth = 0;
  for (std::size_t j = i + 1; j < t.size(); ++j) {
    const Token& k = t[j];
    if (k.is("<") || k.is("(")) ++depth;
    else if (k.is(">") || k.is(")")) --depth;
    else if (k.is(">>")) depth -= 2;
    else if (depth == 0 && (k.is(";") || k.is("=") || k.is(",") || k.is("[") || k.is("{")))
      return j >= 2 && t[j - 1].kind == TokenKind::identifier && t[j - 2].is("::");
  }
  return false;
}

std::pair<std::size_t, std::size_t> declaration_initializer(const std::vector<Token>& t, std::size_t i) {
  int depth = 0;
  std::size_t eq = 0;
  for (std::size_t j = i + 1; j < t.size(); ++j) {
    const Token& k = t[j];
    if (k.is("(") || k.is("[") || k.is("{")) ++depth;
    else if (k.is(")") || k.is("]") || k.is("}")) --depth;
    else if (depth == 0 && k.is("=") && !eq) eq = j;
    else if (depth == 0 && (k.is(";") || k.is(","))) return eq ? std::make_pair(eq, j) : std::make_pair(std::size_t(0), std::size_t(0));
    if (depth < 0) break;
  }
  return {0, 0};
}

namespace {

// The function named before the call or declaration parenthesis that encloses token j
// (`f(`, `f<T>(`), or "".
std::string enclosing_callee(const std::vector<Token>& t, std::size_t j) {
  int depth = 0;
  for (std::size_t k = j; k-- > 0;) {
    if (t[k].is(")") || t[k].is("]") || t[k].is("}")) ++depth;
    else if (t[k].is("[") || t[k].is("{")) {
      if (--depth < 0) return "";
    } else if (t[k].is("(") && --depth < 0) {
      std::size_t n = k;
      if (n > 0 && t[n - 1].is(">")) {  // skip a template argument list
        int angles = 0;
        while (n-- > 0) {
          if (t[n].is(">")) ++angles;
          else if (t[n].is("<") && --angles == 0) break;
        }
      }
      return n > 0 && t[n - 1].kind == TokenKind::identifier ? t[n - 1].text : "";
    }
  }
  return "";
}

}  // namespace

std::set<std::string> pointer_reference_functions(const std::vector<Token>& t) {
  std::set<std::string> functions;
  for (std::size_t k = 0; k + 1 < t.size(); ++k) {
    if (!t[k].is("*")) continue;
    const std::size_t amp = t[k + 1].is_identifier("const") ? k + 2 : k + 1;
    if (amp < t.size() && t[amp].is("&")) {
      const std::string f = enclosing_callee(t, k);
      if (!f.empty()) functions.insert(f);
    }
  }
  return functions;
}

bool passed_to(const std::vector<Token>& t, std::size_t open, std::size_t close, const std::string& name,
               const std::set<std::string>& functions) {
  if (functions.empty()) return false;
  for (std::size_t j = open + 1; j < close && j + 1 < t.size(); ++j) {
    if (t[j].kind != TokenKind::identifier || t[j].text != name) continue;
    if (!(t[j - 1].is("(") || t[j - 1].is(",")) || !(t[j + 1].is(",") || t[j + 1].is(")"))) continue;
    if (functions.count(enclosing_callee(t, j))) return true;
  }
  return false;
}

}  // namespace metalcall::msl
