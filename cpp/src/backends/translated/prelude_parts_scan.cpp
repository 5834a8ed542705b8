// Reading what each prelude part declares (see prelude_parts_scan.hpp): namespace-scope
// declarations, macros, the arguments of the prelude's own macro calls, pasted-name shapes; the
// branches NVRTC never reads are skipped.
#include "backends/translated/prelude_parts_scan.hpp"

#include <cctype>
#include <string_view>
#include <unordered_set>

#include "backends/translated/prelude_part_list.hpp"
#include "backends/translated/prelude_words.hpp"

namespace metalcall::translated {

namespace {

// In every prelude (metal_stdlib.h includes them unconditionally; the checked-mode headers
// declare nothing on CUDA).
constexpr const char* kAlways[] = {"metal_stdlib.h",  "metal_config.h",      "metal_scalars.h",
                                   "metal_negation.h", "metal_array.h",      "metal_logging.h",
                                   "metal_uniform.h", "metal_stop.h",        "metal_type_traits.h",
                                   "metal_assert.h",  "metal_checked.h",     "metal_checked_addresses.h",
                                   "metal_poison.h"};  // empty but under METALCALL_POISON_THREADGROUP

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

}  // namespace

PartScan scan_prelude_parts(const EmbeddedFile* files, std::size_t count) {
  const auto& parts = parts_table();
  std::vector<Declared> declared(parts.size());
  PartScan scan;
  for (std::size_t i = 0; i < count; ++i) {
    const std::string_view name = files[i].name;
    bool found = false;
    for (const char* a : kAlways) found = found || name == a;
    for (std::size_t p = 0; p < parts.size() && !found; ++p) {
      for (const char* h : parts[p].headers) {
        if (name != h) continue;
        read_header(files[i].text, declared[p]);
        found = true;
        break;
      }
    }
    scan.complete = scan.complete && found;
  }
  std::set<std::string> excluded;
  for (const Declared& d : declared) excluded.insert(d.excluded.begin(), d.excluded.end());
  Declared earlier;  // what the parts before the current one declare or name
  for (Declared& d : declared) {
    for (const std::string& a : d.macro_arguments)
      if (!matches(a, earlier)) d.names.insert(a);
    for (const std::string& e : excluded) d.names.erase(e);
    earlier.names.insert(d.names.begin(), d.names.end());
    earlier.names.insert(d.macro_arguments.begin(), d.macro_arguments.end());
    earlier.pasted.insert(earlier.pasted.end(), d.pasted.begin(), d.pasted.end());
  }
  for (const Declared& d : declared) scan.parts.push_back({{d.names.begin(), d.names.end()}, d.pasted});
  return scan;
}

}  // namespace metalcall::translated
