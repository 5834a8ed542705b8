// Which prelude parts a translated kernel needs (see prelude_parts.hpp): each part's declared
// names, read once from the embedded headers, against the words of the kernel's code.
#include "backends/translated/prelude_parts.hpp"

#include <cctype>
#include <cstring>
#include <set>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "backends/translated/embedded_prelude.hpp"

namespace metalcall::translated {

namespace {

// The parts of metal_stdlib.h, in its order: their headers and the parts they need.
// Every other header is in every prelude (kAlways).
struct Part {
  const char* name;
  std::vector<const char*> headers;
  std::vector<const char*> needs;
};

const std::vector<Part>& parts_table() {
  static const auto& parts = *new std::vector<Part>{
      {"HALF", {"metal_half.h", "metal_half_cuda.h"}, {}},
      {"VECTOR",
       {"metal_conditional.h", "metal_division.h", "metal_vector.h", "metal_vector_traits.h",
        "metal_types.h"},
       {"HALF"}},
      {"BASE", {"metal_address_space.h", "metal_unaligned.h", "metal_limits.h"}, {"VECTOR"}},
      {"MATH",
       {"metal_math.h", "metal_double.h", "metal_geometric.h", "metal_integer.h", "metal_builtins_cuda.h",
        "metal_relational.h"},
       {"BASE"}},
      {"MATRIX", {"metal_matrix.h"}, {"MATH"}},
      {"SYNC", {"metal_sync.h"}, {"BASE"}},
      {"ATOMIC", {"metal_atomic.h"}, {"SYNC"}},
      {"SIMD", {"metal_simdgroup.h"}, {"SYNC", "MATH"}},
      {"SGMATRIX",
       {"metal_simdgroup_matrix.h", "metal_simdgroup_matrix_ops.h", "metal_simdgroup_fill.h",
        "metal_simdgroup_matrix_cuda.h", "metal_simdgroup_mma_cuda.h", "metal_simdgroup_nest_cuda.h"},
       {"SIMD"}},
      {"APPLE", {"metal_apple_internals.h"}, {"SIMD"}},
      {"TEXTURE", {"metal_texture.h", "metal_texture_sampling.h", "metal_texture_types.h"}, {"MATH", "SYNC"}},
  };
  return parts;
}

// In every prelude (metal_stdlib.h includes them unconditionally; the checked-mode headers
// declare nothing on CUDA).
constexpr const char* kAlways[] = {"metal_stdlib.h",  "metal_config.h",      "metal_scalars.h",
                                   "metal_negation.h", "metal_array.h",      "metal_logging.h",
                                   "metal_uniform.h", "metal_stop.h",        "metal_type_traits.h",
                                   "metal_assert.h",  "metal_checked.h",     "metal_checked_addresses.h"};

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool word_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }

// The words of C++ text (identifiers and numbers, as runs of word characters), punctuation one
// character a token, comments and literals left out. Preprocessor directives come whole (with
// their continuation lines) as one token starting with '#'.
std::vector<std::string_view> tokens(std::string_view s) {
  std::vector<std::string_view> out;
  bool line_start = true;
  std::size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '\n') {
      line_start = true;
      ++i;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++i;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      const std::size_t e = s.find("*/", i + 2);
      i = e == std::string_view::npos ? s.size() : e + 2;
    } else if (c == '"' || c == '\'') {
      ++i;
      while (i < s.size() && s[i] != c && s[i] != '\n') i += s[i] == '\\' ? 2 : 1;
      ++i;
      line_start = false;
    } else if (c == '#' && line_start) {
      std::size_t e = i;
      while (e < s.size() && s[e] != '\n') {
        if (s[e] == '\\' && e + 1 < s.size() && s[e + 1] == '\n') ++e;
        else if (s[e] == '/' && e + 1 < s.size() && s[e + 1] == '/') break;  // a comment ends it
        ++e;
      }
      out.push_back(s.substr(i, e - i));
      while (e < s.size() && s[e] != '\n') ++e;
      i = e;
    } else if (word_char(c)) {
      std::size_t e = i;
      while (e < s.size() && word_char(s[e])) ++e;
      out.push_back(s.substr(i, e - i));
      i = e;
      line_start = false;
    } else {
      out.push_back(s.substr(i, 1));
      ++i;
      line_start = false;
    }
  }
  return out;
}

bool is_identifier(std::string_view t) { return !t.empty() && word_start(t[0]); }

bool is_macro_name(std::string_view t) {  // ALL_CAPS: how the prelude names its macros
  bool letter = false;
  for (char c : t) {
    if (std::islower(static_cast<unsigned char>(c))) return false;
    letter = letter || std::isupper(static_cast<unsigned char>(c));
  }
  return letter;
}

const std::unordered_set<std::string_view>& keywords() {
  static const auto& k = *new std::unordered_set<std::string_view>{
      "alignas", "alignof", "asm", "auto", "bool", "break", "case", "char", "class", "const", "constexpr",
      "const_cast", "continue", "decltype", "default", "delete", "do", "double", "else", "enum", "explicit",
      "extern", "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace",
      "new", "noexcept", "nullptr", "operator", "private", "protected", "public", "register", "reinterpret_cast",
      "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast", "struct", "switch",
      "template", "this", "thread_local", "throw", "true", "typedef", "typeid", "typename", "union", "unsigned",
      "using", "virtual", "void", "volatile", "while", "__device__", "__host__", "__global__", "__shared__",
      "__forceinline__", "__noinline__", "__restrict__", "__align__", "__attribute__", "__extension__"};
  return k;
}

// What a part declares: names, and the shapes of names its macros paste together
// (`mtl_##S##2x2`: prefix "mtl_", suffix "2x2").
struct Declared {
  std::unordered_set<std::string> names;
  // The arguments of its macro calls: names it declares (METAL_FLOAT1(metal, sin, ...)) or uses
  // (METAL_MATRIX_NAMES(half, mtl_half)); those an earlier part declares are left to it.
  std::unordered_set<std::string> macro_arguments;
  std::vector<std::pair<std::string, std::string>> pasted;
  std::set<std::string> excluded;  // namespace and template parameter names
};

void read_define(std::string_view directive, Declared& d) {
  std::vector<std::string_view> t = tokens(directive.substr(1));
  if (t.size() < 2 || t[0] != "define" || !is_identifier(t[1])) return;
  d.names.emplace(t[1]);
  std::set<std::string_view> params;
  std::size_t body = 2;
  if (t.size() > 2 && t[2] == "(" && directive.find(std::string(t[1]) + "(") != std::string_view::npos) {
    for (body = 3; body < t.size() && t[body] != ")"; ++body)
      if (is_identifier(t[body])) params.insert(t[body]);
    ++body;
  }
  // A parameter pasted to words: the words around it give the shape of the names it makes.
  auto paste = [&](std::size_t k) { return k + 1 < t.size() && t[k] == "#" && t[k + 1] == "#"; };
  for (std::size_t k = body; k < t.size(); ++k) {
    if (!params.count(t[k])) continue;
    const bool before = k >= 2 && paste(k - 2), after = paste(k + 1);
    if (!before && !after) continue;
    std::string prefix, suffix;
    if (before && k >= 3 && word_char(t[k - 3][0]) && !params.count(t[k - 3])) prefix = t[k - 3];
    if (after && k + 3 < t.size() && word_char(t[k + 3][0]) && !params.count(t[k + 3])) suffix = t[k + 3];
    if (prefix.size() + suffix.size() >= 3) d.pasted.emplace_back(prefix, suffix);
  }
}

// Where a directive leaves the CUDA compile: the branches of `#if METAL_CUDA` (and of
// `!METAL_CUDA`, `... && !METAL_CUDA`) that NVRTC never reads are skipped; other conditions
// are read on both branches.
class CudaBranches {
 public:
  /** Takes directive `d`; true while the lines after it are on a branch NVRTC reads. */
  bool take(std::string_view d) {
    std::vector<std::string_view> t = tokens(d.substr(1));
    const std::string_view kind = t.empty() ? std::string_view() : t[0];
    if (kind == "if" || kind == "ifdef" || kind == "ifndef") {
      State st = unknown;
      std::string cond;
      for (std::size_t k = 1; k < t.size(); ++k) cond += std::string(t[k]);
      if (kind == "if" && cond.rfind("METAL_CUDA", 0) == 0) st = cuda;
      else if (kind == "if" && (cond.rfind("!METAL_CUDA", 0) == 0 || cond.find("&&!METAL_CUDA") != std::string::npos))
        st = host;
      else if ((kind == "ifdef" && cond == "__CUDACC__") || (kind == "if" && cond == "defined(__CUDACC__)")) st = cuda;
      stack_.push_back(st);
    } else if (kind == "elif" && !stack_.empty()) {
      stack_.back() = stack_.back() == cuda ? host : unknown;
    } else if (kind == "else" && !stack_.empty()) {
      stack_.back() = stack_.back() == cuda ? host : stack_.back() == host ? cuda : unknown;
    } else if (kind == "endif" && !stack_.empty()) {
      stack_.pop_back();
    }
    return reads();
  }
  bool reads() const {
    for (State s : stack_)
      if (s == host) return false;
    return true;
  }

 private:
  enum State { cuda, host, unknown };
  std::vector<State> stack_;
};

// The names `text` declares at namespace scope: functions, types, typedefs and aliases,
// variables, enumerators, macros and the arguments of macro calls there (METAL_FLOAT1(metal,
// sin, ...) declares sin). Members, parameters and bodies are skipped.
void read_header(std::string_view text, Declared& d) {
  const std::vector<std::string_view> t = tokens(text);
  const auto& kw = keywords();
  enum Block { ns, enumeration, other };
  std::vector<Block> braces;
  std::vector<bool> parens;  // at namespace scope: true inside a macro call's arguments
  std::size_t statement = 0;  // index of the current statement's first token
  auto at_ns = [&] {
    for (Block b : braces)
      if (b != ns) return false;
    return true;
  };
  // `w` among the few tokens before the brace at `k`, back to the statement's start
  // (namespace a::b {, extern "C" {, enum class e : unsigned {).
  auto before = [&](std::size_t k, std::string_view w) {
    for (std::size_t j = k; j > statement && j + 8 > k; --j)
      if (t[j - 1] == w) return true;
    return false;
  };
  auto add = [&](std::string_view w, bool argument = false) {
    if (w.size() >= 2 && is_identifier(w) && !kw.count(w)) (argument ? d.macro_arguments : d.names).emplace(w);
  };
  CudaBranches branches;
  for (std::size_t k = 0; k < t.size(); ++k) {
    const std::string_view w = t[k];
    if (w[0] == '#') {
      if (branches.take(w)) read_define(w, d);
      continue;
    }
    if (!branches.reads()) continue;
    const bool scope = at_ns();
    if (w == "{") {
      Block b = other;
      if (parens.empty() && (before(k, "namespace") || before(k, "extern"))) b = ns;
      else if (parens.empty() && before(k, "enum")) b = enumeration;
      if (!scope) b = other;
      braces.push_back(b);
      statement = k + 1;
      continue;
    }
    if (w == "}") {
      if (!braces.empty()) braces.pop_back();
      statement = k + 1;
      continue;
    }
    if (!scope) {
      // Enumerators of an enumeration at namespace scope: memory_order_relaxed, ...
      if (braces.size() >= 1 && braces.back() == enumeration && is_identifier(w) && k > 0 &&
          (t[k - 1] == "{" || t[k - 1] == ","))
        add(w);
      continue;
    }
    if (w == "(") {
      const bool macro = !parens.empty() ? parens.back() : (k > 0 && is_macro_name(t[k - 1]) && !kw.count(t[k - 1]));
      parens.push_back(macro);
      continue;
    }
    if (w == ")") {
      if (!parens.empty()) {
        // A macro call at namespace scope is a statement of its own (it ends without a ';').
        if (parens.size() == 1 && parens.back()) statement = k + 1;
        parens.pop_back();
      }
      continue;
    }
    if (!parens.empty()) {
      if (parens.back()) add(w, true);
      continue;
    }
    if (w == ";") {
      // typedef ... name; using ns::name;
      if ((t[statement] == "typedef" || t[statement] == "using") && k > 0 && is_identifier(t[k - 1]) &&
          !(statement + 1 < t.size() && t[statement + 1] == "namespace"))
        add(t[k - 1]);
      statement = k + 1;
      continue;
    }
    if (w == "template" && k + 1 < t.size() && t[k + 1] == "<") {
      // Skip the parameter list; its names (T, N, Packed) are no declarations.
      int depth = 0;
      std::size_t e = k + 1;
      for (; e < t.size(); ++e) {
        if (t[e] == "<" || t[e] == "(") ++depth;
        else if (t[e] == ">" || t[e] == ")") {
          if (--depth == 0) break;
        } else if (is_identifier(t[e]) && !kw.count(t[e]) && e + 1 < t.size() &&
                   (t[e + 1] == "," || t[e + 1] == ">" || t[e + 1] == "=") &&
                   (kw.count(t[e - 1]) || t[e - 1] == "." || is_identifier(t[e - 1]))) {
          d.excluded.emplace(t[e]);
        }
      }
      k = e;
      continue;
    }
    if (!is_identifier(w) || kw.count(w)) {
      if (w == "namespace" && k + 1 < t.size()) d.excluded.emplace(t[k + 1]);
      continue;
    }
    const std::string_view prev = k > 0 ? t[k - 1] : std::string_view();
    const std::string_view next = k + 1 < t.size() ? t[k + 1] : std::string_view();
    if (prev == "namespace" || prev == "operator") continue;
    if (prev == "struct" || prev == "class" || prev == "union" || prev == "enum") add(w);
    else if (prev == "using" && next == "=") add(w);
    else if (next == "(" && !is_macro_name(w)) add(w);  // a function
    else if ((next == "=" || next == "[" || next == "{" || next == ";") &&
             (is_identifier(prev) || prev == ">" || prev == "*" || prev == "&") && !kw.count(prev) &&
             t[statement] != "using" && t[statement] != "typedef")
      add(w);  // a variable
  }
}

bool matches(const std::string_view w, const Declared& d) {
  if (d.names.count(std::string(w))) return true;
  for (const auto& [prefix, suffix] : d.pasted) {
    // The pasted argument is a type or function name of 3 characters or more (int, half, sin):
    // mtl_p2, a translation's parameter, is no vector type.
    if (w.size() >= prefix.size() + suffix.size() + 3 && w.compare(0, prefix.size(), prefix) == 0 &&
        w.compare(w.size() - suffix.size(), suffix.size(), suffix) == 0)
      return true;
  }
  return false;
}

struct Tables {
  bool complete = true;  // every embedded header belongs to a part or is always in
  std::vector<Declared> declared;  // per part of parts_table()
};

const Tables& tables() {
  static const auto& tables = *new Tables([] {
    Tables tb;
    const auto& parts = parts_table();
    tb.declared.resize(parts.size());
    std::set<std::string> excluded;
    for (std::size_t i = 0; i < kEmbeddedPreludeCount; ++i) {
      const std::string_view name = kEmbeddedPrelude[i].name;
      bool found = false;
      for (const char* a : kAlways) found = found || name == a;
      for (std::size_t p = 0; p < parts.size() && !found; ++p) {
        for (const char* h : parts[p].headers) {
          if (name != h) continue;
          read_header(kEmbeddedPrelude[i].text, tb.declared[p]);
          found = true;
          break;
        }
      }
      tb.complete = tb.complete && found;
    }
    for (const Declared& d : tb.declared) excluded.insert(d.excluded.begin(), d.excluded.end());
    Declared earlier;  // what the parts before the current one declare or name
    for (Declared& d : tb.declared) {
      for (const std::string& a : d.macro_arguments)
        if (!matches(a, earlier)) d.names.insert(a);
      for (const std::string& e : excluded) d.names.erase(e);
      earlier.names.insert(d.names.begin(), d.names.end());
      earlier.names.insert(d.macro_arguments.begin(), d.macro_arguments.end());
      earlier.pasted.insert(earlier.pasted.end(), d.pasted.begin(), d.pasted.end());
    }
    return tb;
  }());
  return tables;
}


}  // namespace

std::vector<std::string> prelude_parts(const std::string& code) {
  const Tables& tb = tables();
  const auto& parts = parts_table();
  std::vector<std::string> out;
  if (!tb.complete) return out;
  // Every word of the code, those of its directives too (a defines= value may call sin), but
  // not the names the code defines itself (#define METALCALL_SGM_ELEMENTS 0).
  std::unordered_set<std::string_view> words;
  for (std::string_view w : tokens(code)) {
    if (is_identifier(w)) {
      words.insert(w);
    } else if (w[0] == '#') {
      std::size_t k = 1;
      while (k < w.size() && !word_start(w[k])) ++k;
      std::size_t e = k;
      while (e < w.size() && word_char(w[e])) ++e;
      const bool define = w.substr(k, e - k) == "define";
      const std::vector<std::string_view> inner = tokens(w.substr(e));
      for (std::size_t j = define ? 1 : 0; j < inner.size(); ++j)
        if (is_identifier(inner[j])) words.insert(inner[j]);
    }
  }
  std::vector<bool> in(parts.size(), false);
  for (std::string_view w : words) {
    for (std::size_t p = 0; p < parts.size(); ++p) in[p] = in[p] || matches(w, tb.declared[p]);
  }
  // The parts needed by those in (the table lists a part after those it needs).
  for (std::size_t p = parts.size(); p-- > 0;) {
    if (!in[p]) continue;
    for (const char* need : parts[p].needs)
      for (std::size_t q = 0; q < p; ++q) in[q] = in[q] || std::strcmp(parts[q].name, need) == 0;
  }
  for (std::size_t p = 0; p < parts.size(); ++p)
    if (in[p]) out.push_back(parts[p].name);
  return out;
}

std::vector<std::string> prelude_part_options(const std::string& code) {
  std::vector<std::string> out;
  if (!tables().complete) return out;
  out.push_back("-DMETALCALL_PRELUDE_PARTS=1");
  for (const std::string& p : prelude_parts(code)) out.push_back("-DMETALCALL_PART_" + p + "=1");
  return out;
}

}  // namespace metalcall::translated
