// The front end's acceptance rules (see msl_rules.hpp; the table is docs/msl-rules.md).
// Token level, like the rest of the front end: each rule looks for the spelling of a
// construct MSL does not have. Prelude code is never checked, only the user's tokens.
#include "msl/analysis/msl_rules.hpp"

#include <cstdlib>
#include <set>

#include "metalcall/reflection.hpp"
#include "msl/analysis/call_graph.hpp"
#include "msl/analysis/function_pointers.hpp"
#include "msl/analysis/recursion.hpp"
#include "msl/analysis/reserved_names.hpp"
#include "msl/analysis/implementation_rules.hpp"
#include "msl/analysis/keyword_names.hpp"
#include "msl/analysis/memory_rules.hpp"
#include "msl/analysis/pointer_spaces.hpp"
#include "msl/errors/source_errors.hpp"
#include "msl/analysis/stdlib_names.hpp"
#include "msl/analysis/vector_element_addresses.hpp"

namespace metalcall::msl {

namespace {

enum class Scope { namespace_, class_, block, initializer };

bool is_reserved(const std::string& id) {
  return id.size() > 1 && id[0] == '_' && (id[1] == '_' || (id[1] >= 'A' && id[1] <= 'Z'));
}

// Attributes MSL defines (spec §5: function, argument and variable attributes, the
// compute built-ins of §5.2.3) and the standard C++ attributes MSL inherits.
const std::set<std::string>& msl_attributes() {
  static const auto& a = *new std::set<std::string>{
      "kernel", "vertex", "fragment", "visible", "stitchable", "intersection", "object", "mesh", "host_name",
      "function_constant", "buffer", "texture", "sampler", "threadgroup", "threadgroup_imageblock",
      "imageblock_data", "stage_in", "position", "point_size", "clip_distance", "color", "raster_order_group",
      "depth", "stencil", "sample_id", "sample_mask", "front_facing", "point_coord", "barycentric_coord",
      "vertex_id", "instance_id", "base_vertex", "base_instance", "amplification_id", "amplification_count",
      "render_target_array_index", "viewport_array_index", "primitive_id", "patch_id", "position_in_patch",
      "flat", "center_perspective", "center_no_perspective", "centroid_perspective", "centroid_no_perspective",
      "sample_perspective", "sample_no_perspective", "user", "attribute", "id", "early_fragment_tests", "patch",
      "max_total_threads_per_threadgroup", "max_total_threadgroups_per_mesh_grid", "payload", "shared",
      "primitive_culled", "thread_position_in_grid", "thread_position_in_threadgroup",
      "thread_index_in_threadgroup", "threadgroup_position_in_grid", "threads_per_grid", "threads_per_threadgroup",
      "threadgroups_per_grid", "dispatch_threads_per_threadgroup", "thread_index_in_simdgroup",
      "thread_index_in_quadgroup", "thread_execution_width", "threads_per_simdgroup",
      "simdgroup_index_in_threadgroup", "simdgroups_per_threadgroup", "dispatch_simdgroups_per_threadgroup",
      "quadgroup_index_in_threadgroup", "quadgroups_per_threadgroup", "dispatch_quadgroups_per_threadgroup",
      "grid_origin", "grid_size", "visible_function_table", "intersection_function_table",
      "instance_acceleration_structure", "primitive_acceleration_structure", "alias_implicit_imageblock",
      "alias_implicit_imageblock_color", "origin", "direction", "min_distance", "max_distance", "distance",
      "user_instance_id", "instance_intersection_function_table_offset", "geometry_intersection_function_table_offset",
      "world_space_origin", "world_space_direction", "object_space_origin", "object_space_direction",
      "object_to_world_transform", "world_to_object_transform", "primitive_data",
      // standard C++ attributes
      "invariant", "maybe_unused", "nodiscard", "fallthrough", "likely", "unlikely", "deprecated", "noreturn",
      "carries_dependency"};
  return a;
}

// GNU attributes MSL code spells (Apple's metal_stdlib uses __attribute__((always_inline))
// for METAL_FUNC): inlining, alignment, unused, packed, overloadable. Nothing that runs code.
const std::set<std::string>& gnu_attributes() {
  static const auto& a = *new std::set<std::string>{"always_inline", "noinline", "unused", "aligned", "packed",
                                          "overloadable", "const", "pure", "flatten"};
  return a;
}

std::string strip_underscores(const std::string& n) {
  if (n.size() > 4 && n.compare(0, 2, "__") == 0 && n.compare(n.size() - 2, 2, "__") == 0) return n.substr(2, n.size() - 4);
  return n;
}

class RuleChecker {
 public:
  RuleChecker(const std::vector<Token>& t, const std::string& source) : t_(t), src_(source) {}

  void run() {
    compute_scopes();
    const DeclaredNames names = declared_names(t_);
    names_ = &names;
    reserved_variables_ = declared_reserved_variables(t_);
    check_tokens();
    check_program_scope(names);
    check_function_pointers(t_, src_, names);
    check_calls(t_, src_, names, stdlib_names());
    check_recursion(t_, src_, names);
  }

 private:
  const std::vector<Token>& t_;
  const std::string& src_;
  std::vector<Scope> scope_;         // per token: the innermost scope it is in
  std::vector<Scope> brace_kind_;    // per token: for '{', the scope it opens
  const DeclaredNames* names_ = nullptr;
  std::set<std::string> reserved_variables_;  // the translation spells them mtl_user_X

  [[noreturn]] void refuse(std::size_t i, const std::string& message, const std::string& rule) const {
    throw rule_error(src_, t_[i], message, rule);
  }

  // Back from the '{' at i to the start of its statement: what it opens.
  Scope kind_of_brace(std::size_t i) const {
    if (i == 0) return Scope::block;
    const Token& before = t_[i - 1];
    if (before.is(":")) return Scope::block;  // `case 1: {`
    if (before.is("=") || before.is(",") || before.is("(") || before.is("{") || before.is("[") ||
        before.is_identifier("return") || before.is("?") || before.is("<"))
      return Scope::initializer;
    if (before.is("]")) {  // `a[3] {...}` initialises an array; `[&] {` starts a lambda's body
      int depth = 0;
      std::size_t k = i - 1;
      for (; k > 0; --k) {
        if (t_[k].is("]")) ++depth;
        else if (t_[k].is("[") && --depth == 0) break;
      }
      if (k > 0 && (t_[k - 1].kind == TokenKind::identifier || t_[k - 1].is("]"))) return Scope::initializer;
      return Scope::block;
    }
    std::size_t start = i;
    int depth = 0;
    while (start > 0) {
      const Token& b = t_[start - 1];
      if (b.is(")") || b.is("]")) ++depth;
      else if (b.is("(") || b.is("[")) --depth;
      else if (depth == 0 && (b.is(";") || b.is("{") || b.is("}"))) break;
      if (b.kind == TokenKind::directive) break;
      --start;
    }
    bool has_paren = false;
    for (std::size_t j = start; j < i; ++j) {
      if (t_[j].is_identifier("namespace")) return Scope::namespace_;
      if (t_[j].kind == TokenKind::string && j > 0 && t_[j - 1].is_identifier("extern") && j + 1 == i)
        return Scope::namespace_;  // `extern "C" {`, not `extern "C" struct P {`
      // `struct alignas(8) {` and `struct __attribute__((packed)) S {` open class bodies still
      if ((t_[j].is_identifier("alignas") || t_[j].is_identifier("__attribute__")) && j + 1 < i && t_[j + 1].is("(")) {
        j = matching(t_, j + 1);
        continue;
      }
      if (t_[j].is("(")) has_paren = true;
    }
    std::size_t j = start;
    while (j < i) {  // leading template<...>, attributes, typedef
      if (t_[j].is_identifier("template") && j + 1 < i && t_[j + 1].is("<")) {
        int angle = 0;
        for (++j; j < i; ++j) {
          if (t_[j].is("<")) ++angle;
          else if (t_[j].is(">") && --angle == 0) break;
          else if (t_[j].is(">>") && (angle -= 2) <= 0) break;
        }
        ++j;
      } else if (t_[j].is("[") && j + 1 < i && t_[j + 1].is("[")) {
        j = matching(t_, j) + 1;
      } else if (t_[j].is_identifier("typedef") || t_[j].is_identifier("constant") || t_[j].is_identifier("const")) {
        ++j;
      } else {
        break;
      }
    }
    if (j < i && (t_[j].is_identifier("struct") || t_[j].is_identifier("class") || t_[j].is_identifier("union") ||
                  t_[j].is_identifier("enum")) && !has_paren)
      return Scope::class_;
    if (before.is(")") || before.is_identifier("else") || before.is_identifier("do") || before.is_identifier("try") ||
        before.is_identifier("const") || before.is_identifier("mutable") || before.is_identifier("noexcept") ||
        before.is(";") || before.is("}") || before.is_identifier("override") ||
        before.is_identifier("final"))
      return Scope::block;
    {  // `) const {`, `) thread {`: qualifiers after a parameter list open a body
      static const auto& qualifiers = *new std::set<std::string>{"const", "volatile", "thread", "device", "constant",
                                                       "threadgroup", "noexcept", "override", "final", "mutable"};
      std::size_t k = i;
      while (k > start && t_[k - 1].kind == TokenKind::identifier && qualifiers.count(t_[k - 1].text)) --k;
      if (k < i && k > start && t_[k - 1].is(")")) return Scope::block;
    }
    if (before.kind == TokenKind::identifier || before.is(">")) {
      // `-> T {` (a trailing return type) opens a body; `T x {` and `T<U>{` initialise.
      for (std::size_t k = i; k > start; --k)
        if (t_[k - 1].is("->")) return Scope::block;
      return Scope::initializer;
    }
    return Scope::block;
  }

  void compute_scopes() {
    scope_.assign(t_.size(), Scope::namespace_);
    brace_kind_.assign(t_.size(), Scope::block);
    std::vector<Scope> stack;
    for (std::size_t i = 0; i < t_.size(); ++i) {
      scope_[i] = stack.empty() ? Scope::namespace_ : stack.back();
      if (t_[i].is("{")) {
        brace_kind_[i] = kind_of_brace(i);
        stack.push_back(brace_kind_[i]);
      } else if (t_[i].is("}") && !stack.empty()) {
        stack.pop_back();
      }
    }
  }

  bool in_function(std::size_t i) const { return scope_[i] == Scope::block || scope_[i] == Scope::initializer; }

  void check_pragma(std::size_t i, const std::string& text) const {
    // `#pragma WORD [WORD]`: loop and diagnostic control only.
    std::size_t p = text.find_first_not_of(" \t", 1);
    p = text.find_first_not_of(" \t", p + 6);
    std::string words;
    for (int w = 0; w < 2 && p != std::string::npos && p < text.size(); ++w) {
      std::size_t e = p;
      while (e < text.size() && (std::isalnum(static_cast<unsigned char>(text[e])) || text[e] == '_')) ++e;
      words += (w ? " " : "") + text.substr(p, e - p);
      p = text.find_first_not_of(" \t", e);
    }
    // Clang (Apple's compiler) ignores a pragma that starts with no name (`#pragma -`, Xcode's
    // section marks in Paddle-Lite) and `region`/`endregion`, with a warning at most.
    if (words.find_first_not_of(" ") == std::string::npos) return;
    static const auto& first = *new std::set<std::string>{"once", "unroll", "nounroll", "METAL", "mark", "unused",
                                                         "region", "endregion"};
    static const auto& pairs = *new std::set<std::string>{"clang loop", "clang diagnostic", "clang fp", "clang unroll",
                                                "GCC unroll", "GCC diagnostic", "GCC ivdep", "STDC FP_CONTRACT"};
    const std::string one = words.substr(0, words.find(' '));
    if (first.count(one) || pairs.count(words)) return;
    refuse(i, "'#pragma " + words + "' is not an MSL pragma (loop and diagnostic pragmas are)", "pragmas");
  }

  // `[[a, ns::b(x)]]` at i: every attribute MSL defines, indices within Metal's limits.
  void check_attribute_list(std::size_t i) const {
    const std::size_t end = matching(t_, i);
    for (std::size_t j = i + 2; j + 1 < end;) {
      if (t_[j].is(",")) {
        ++j;
        continue;
      }
      if (t_[j].kind != TokenKind::identifier) refuse(j, "malformed attribute", "attributes MSL defines");
      std::string name = t_[j].text;
      const std::size_t name_token = j;
      if (name == "using") refuse(j, "attribute namespaces ([[using ...]]) are not MSL", "attributes MSL defines");
      ++j;
      // Optimisation hints, no semantics: SPIRV-Cross puts [[clang::optnone]] on its float-control helpers.
      static const auto& hints = *new std::set<std::string>{"clang::optnone", "clang::noinline", "clang::always_inline",
                                                   "gnu::noinline", "gnu::always_inline"};
      if (j + 1 < end && t_[j].is("::") && hints.count(name + "::" + t_[j + 1].text)) {
        j += 2;
        continue;
      }
      if (j < end && t_[j].is("::")) {
        refuse(name_token, "attribute '" + name + "::" + (j + 1 < end ? t_[j + 1].text : "") +
                               "' is a compiler extension, not an attribute MSL defines",
               "attributes MSL defines");
      }
      if (!msl_attributes().count(name))
        refuse(name_token, "attribute [[" + name + "]] is not defined by MSL", "attributes MSL defines");
      if (j < end && t_[j].is("(")) {
        const std::size_t close = matching(t_, j);
        check_index(name, j, close);
        j = close + 1;
      }
    }
  }

  void check_index(const std::string& name, std::size_t open, std::size_t close) const {
    int limit = -1;
    const char* table = "";
    if (name == "buffer") limit = kMaxBufferIndex, table = "buffer";
    else if (name == "threadgroup") limit = kMaxThreadgroupIndex, table = "threadgroup memory";
    else if (name == "texture") limit = kMaxTextureIndex, table = "texture";
    else if (name == "sampler") limit = kMaxSamplerIndex, table = "sampler";
    if (limit < 0 || close != open + 2 || t_[open + 1].kind != TokenKind::number) return;  // an expression: later
    const std::string& n = t_[open + 1].text;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(n.c_str(), &end, 0);
    if (v > static_cast<unsigned long long>(limit)) {
      refuse(open + 1, "[[" + name + "(" + n + ")]]: Metal's " + table + " argument table has indices 0 to " +
                           std::to_string(limit),
             "argument indices within Metal's limits");
    }
  }

  // `__attribute__((a, b(x)))` at i.
  void check_gnu_attribute(std::size_t i) const {
    if (i + 2 >= t_.size() || !t_[i + 1].is("(") || !t_[i + 2].is("("))
      refuse(i, "malformed __attribute__", "attributes MSL defines");
    const std::size_t close = matching(t_, i + 2);
    for (std::size_t j = i + 3; j < close;) {
      if (t_[j].is(",")) {
        ++j;
        continue;
      }
      const std::string name = strip_underscores(t_[j].text);
      if (t_[j].kind != TokenKind::identifier || !gnu_attributes().count(name))
        refuse(j, "__attribute__((" + t_[j].text + ")) is not an attribute MSL code may use (only inlining, "
                  "alignment and unused-marking GNU attributes are)",
               "attributes MSL defines");
      ++j;
      if (j < close && t_[j].is("(")) j = matching(t_, j) + 1;
    }
  }

  // `( * name ) (` / `( & name ) (` / `( * ) (`: a pointer or reference to a function.
  bool function_pointer_at(std::size_t i) const {
    if (!t_[i].is("(") || i + 2 >= t_.size() || !(t_[i + 1].is("*") || t_[i + 1].is("&") || t_[i + 1].is("^")))
      return false;
    if (t_[i + 2].is_identifier("this")) return false;  // `(*this)(…)`: a function object's call
    std::size_t j = i + 2;
    while (j < t_.size() && (t_[j].kind == TokenKind::identifier || t_[j].is("::"))) ++j;
    return j + 1 < t_.size() && t_[j].is(")") && t_[j + 1].is("(");
  }

  // A function pointer type is allowed where it is a compile-time name: a template
  // parameter (ggml's `void (*deq)(...)` parameters) or a type alias (MLX's `using
  // RadixFunc = void (*)(...)`). A variable, parameter or cast of one is a run-time
  // function pointer.
  bool compile_time_function_type(std::size_t i) const {
    std::size_t start = i;
    int depth = 0;
    while (start > 0) {
      const Token& b = t_[start - 1];
      if (b.is(")") || b.is("]")) ++depth;
      else if (b.is("(") || b.is("[")) {
        if (depth == 0) {  // inside a parameter list: keep going to the statement's start
          --start;
          continue;
        }
        --depth;
      } else if (depth == 0 && (b.is(";") || b.is("{") || b.is("}"))) break;
      if (b.kind == TokenKind::directive) break;
      --start;
    }
    if (t_[start].is_identifier("using") || t_[start].is_identifier("typedef")) return true;
    if (!t_[start].is_identifier("template") || start + 1 >= i || !t_[start + 1].is("<")) return false;
    int angle = 0;  // inside `template < ... >` when the brackets opened there are still open at i
    for (std::size_t k = start + 1; k < i; ++k) {
      if (t_[k].is("<")) ++angle;
      else if (t_[k].is(">")) --angle;
      else if (t_[k].is(">>")) angle -= 2;
      if (angle <= 0) return t_[k + 1].is_identifier("using");  // `template <class T> using F = ...`
    }
    return angle > 0;
  }

  // `&&L` of a label L (`L:` after a statement's end): a code address, for computed goto (GNU).
  void check_label_addresses() const {
    std::set<std::string> labels;
    for (std::size_t i = 1; i + 2 < t_.size(); ++i) {
      const Token& b = t_[i - 1];
      if (t_[i].kind == TokenKind::identifier && t_[i + 1].is(":") && (b.is(";") || b.is("{") || b.is("}")) &&
          !is_keyword(t_[i].text))
        labels.insert(t_[i].text);
    }
    if (labels.empty()) return;
    for (std::size_t i = 0; i + 1 < t_.size(); ++i)
      if (t_[i].is("&&") && t_[i + 1].kind == TokenKind::identifier && labels.count(t_[i + 1].text))
        refuse(i, "'&&" + t_[i + 1].text + "' takes a label's address (a GNU extension, for computed goto): MSL has no "
                  "goto", "no goto");
  }

  void check_tokens() const {
    check_label_addresses();
    for (std::size_t i = 0; i < t_.size(); ++i) {
      const Token& x = t_[i];
      if (x.kind == TokenKind::directive) {
        std::size_t p = x.text.find_first_not_of(" \t", 1);
        if (p != std::string::npos && x.text.compare(p, 6, "pragma") == 0) check_pragma(i, x.text);
        continue;
      }
      if (x.is("[") && i + 1 < t_.size() && t_[i + 1].is("[")) {
        check_attribute_list(i);
        i = matching(t_, i);
        continue;
      }
      if (function_pointer_at(i) && !compile_time_function_type(i))
        refuse(i, "a run-time pointer or reference to a function (a variable, parameter or cast): metalcall's kernels "
                  "have no function pointers beyond compile-time ones (template parameters, type aliases)",
               "no function pointers");
      if (x.kind != TokenKind::identifier) continue;
      const std::string& id = x.text;
      // Before the member test: `a.mtl_count` names the checked pointer's state as surely as
      // `metal::mtl_checked<float>` names its type.
      if (const char* why = implementation_name(id)) refuse(i, "'" + id + "' " + why, "no names of metalcall's implementation");
      const bool member = i > 0 && (t_[i - 1].is(".") || t_[i - 1].is("->"));
      if (member) continue;
      // Most identifiers are none of the words below: one lookup instead of a chain of compares.
      static const auto& watched = *new std::set<std::string>{"asm", "extern", "throw", "try", "catch", "new", "delete",
                                                    "virtual", "thread_local", "register", "goto", "typeid",
                                                    "dynamic_cast", "main", "std", "static"};
      if (id[0] != '_' && !watched.count(id)) continue;
      if (id == "asm" || id == "__asm" || id == "__asm__")
        refuse(i, "inline assembly is not MSL", "no inline assembly");
      // `extern "C" struct P { … };` (mistral.rs) defines a type, which has no linkage: harmless, and
      // Apple's compiler takes it. Any other extern declares something to link to.
      const bool linkage_of_a_type = i + 4 < t_.size() && t_[i + 1].kind == TokenKind::string &&
                                     (t_[i + 2].is_identifier("struct") || t_[i + 2].is_identifier("class") ||
                                      t_[i + 2].is_identifier("union") || t_[i + 2].is_identifier("enum")) &&
                                     t_[i + 3].kind == TokenKind::identifier && (t_[i + 4].is("{") || t_[i + 4].is(":"));
      if (id == "extern" && !linkage_of_a_type)
        refuse(i, "'extern' declarations are not MSL: a kernel source is one unit and links to nothing",
               "no extern declarations");
      if (id == "throw" || id == "try" || id == "catch")
        refuse(i, "exception handling ('" + id + "') is not supported in MSL (spec §1.5.4)", "no exceptions");
      if (id == "new" || (id == "delete" && !(i > 0 && t_[i - 1].is("="))))
        refuse(i, "'" + id + "' is not supported in MSL (spec §1.5.4): kernels allocate no memory", "no new/delete");
      if (id == "virtual") refuse(i, "virtual functions are not supported in MSL (spec §1.5.4)", "no virtual functions");
      if (id == "thread_local" || id == "register")
        refuse(i, "the '" + id + "' storage class is not supported in MSL (spec §1.5.4)", "no thread_local or register");
      if (id == "goto") refuse(i, "'goto' is not supported in MSL (spec §1.5.4)", "no goto");
      if (id == "typeid" || id == "dynamic_cast")
        refuse(i, "'" + id + "' (run-time type information) is not supported in MSL (spec §1.5.4)", "no RTTI");
      if (id == "main" && i + 1 < t_.size() && t_[i + 1].is("(") && !in_function(i))
        refuse(i, "an MSL function may not be named 'main' (spec §1.5.4)", "no function named main");
      if (id == "__attribute__") {
        check_gnu_attribute(i);
        i = matching(t_, i + 1);
        continue;
      }
      if (id == "_Pragma") refuse(i, "_Pragma is not MSL; use #pragma", "pragmas");
      if (id.rfind("__builtin", 0) == 0 && !allowed_builtin(id))
        refuse(i, "'" + id + "' is a compiler builtin, not part of the Metal standard library", "no compiler builtins");
      if (is_reserved(id) && !reserved_name_allowed(id))
        refuse(i, "'" + id + "' is a reserved name of the host compiler or C library, not MSL", "no reserved names");
      if (id == "std" && i + 1 < t_.size() && t_[i + 1].is("::"))
        refuse(i, "'std::' names the C++ standard library, which MSL does not have (spec §1.5.4); use metal::",
               "no host library");
      if (id == "static" && scope_[i] == Scope::block) check_static_local(i);
      if (id == "static" && scope_[i] == Scope::class_) check_static_member(i);
    }
    // `::name` (the global namespace) must name something of the source or the standard library.
    for (std::size_t i = 0; i + 1 < t_.size(); ++i) {
      if (!t_[i].is("::") || t_[i + 1].kind != TokenKind::identifier) continue;
      if (i > 0 && (t_[i - 1].kind == TokenKind::identifier || t_[i - 1].is(">"))) continue;  // qualified
      const std::string& n = t_[i + 1].text;
      if (!stdlib_names().count(n) && !declared_in_source(n))
        refuse(i + 1, "'::" + n + "' names the host C library, not MSL", "no host library");
    }
  }

  // msl_rules.hpp's is_allowed_builtin.
  static bool allowed_builtin(const std::string& id) { return is_allowed_builtin(id); }

  // A reserved name (`__x`, `_X`) the source may use: its own types and functions (MLX
  // has `struct __None`), those the prelude declares (Apple's public-internal names),
  // Apple's __metal_* intrinsics and __METAL_*__ macros, the
  // compile-time type traits (__is_empty(T)), the compilers' predefined constants and a
  // few spellings MSL code uses.

  bool reserved_name_allowed(const std::string& id) const {
    static const auto& spellings = *new std::set<std::string>{"__restrict", "__restrict__", "__func__", "__LINE__", "__FILE__",
                                                    "__extension__", "__inline", "__inline__", "__alignof__"};
    if (spellings.count(id) || names_->functions.count(id) || names_->types.count(id) || reserved_variables_.count(id) ||
        allowed_builtin(id) ||
        prelude_reserved_names().count(id))
      return true;
    if (id.rfind("__metal_", 0) == 0 || id.rfind("__METAL_", 0) == 0 || id.rfind("__is_", 0) == 0 ||
        id.rfind("__has_", 0) == 0)
      return true;
    // The compilers' predefined constants (__UINT32_MAX__, __FLT_EPSILON__): values, never code.
    bool constant_macro = id.size() > 4 && id.compare(id.size() - 2, 2, "__") == 0;
    for (std::size_t k = 2; constant_macro && k + 2 < id.size(); ++k)
      constant_macro = (id[k] >= 'A' && id[k] <= 'Z') || (id[k] >= '0' && id[k] <= '9') || id[k] == '_';
    return constant_macro;
  }

  bool declared_in_source(const std::string& n) const { return names_->declares(n) || names_->prototypes.count(n); }

  // `static` in a function: only constants (constant address space, constexpr, const).
  void check_static_local(std::size_t i) const {
    int depth = 0;
    for (std::size_t j = i + 1; j < t_.size(); ++j) {
      if (t_[j].is("(") || t_[j].is("[") || t_[j].is("{")) ++depth;
      else if (t_[j].is(")") || t_[j].is("]") || t_[j].is("}")) --depth;
      if (depth < 0 || (depth == 0 && (t_[j].is(";") || t_[j].is("=")))) break;
      if (t_[j].is_identifier("constant") || t_[j].is_identifier("constexpr") || t_[j].is_identifier("const")) return;
    }
    if (i > 0 && (t_[i - 1].is_identifier("constexpr") || t_[i - 1].is_identifier("constant") ||
                  t_[i - 1].is_identifier("const")))
      return;
    refuse(i, "a 'static' variable in a function must be a constant (constant address space or constexpr): "
              "kernel threads share no mutable state outside buffers",
           "program-scope and static variables are constant");
  }

  // `static` in a class: a data member defined there (`static inline int c = 0;`, C++17) is a
  // program-scope variable, so a constant as well; without `inline` it is only declared, and
  // its definition outside the class meets check_program_scope. Before 2026-12-05 an inline one
  // was mutable state shared by every thread and call. Member functions are not variables.
  void check_static_member(std::size_t i) const {
    bool is_inline = i > 0 && t_[i - 1].is_identifier("inline");
    int angle = 0;  // `static inline W<int, 2> w;`: its commas and brackets are the type's
    for (std::size_t j = i + 1; j < t_.size(); ++j) {
      const Token& x = t_[j];
      if (x.is("<")) ++angle;
      else if (x.is(">") && angle > 0) --angle;
      else if (x.is(">>") && angle > 0) angle = angle > 1 ? angle - 2 : 0;
      if (x.is_identifier("constant") || x.is_identifier("constexpr") || x.is_identifier("const")) return;
      if (x.is_identifier("inline")) is_inline = true;
      if ((x.is_identifier("__attribute__") || x.is_identifier("alignas")) && j + 1 < t_.size() && t_[j + 1].is("(")) {
        j = matching(t_, j + 1);
        continue;
      }
      if (angle == 0 && (x.is("(") || x.is("operator"))) return;  // a member function
      if (x.is("[")) j = matching(t_, j);
      else if (angle == 0 && (x.is(";") || x.is("=") || x.is("{") || x.is(",") || x.is("}"))) break;
    }
    if (i > 0 && (t_[i - 1].is_identifier("constexpr") || t_[i - 1].is_identifier("constant") ||
                  t_[i - 1].is_identifier("const")))
      return;
    if (!is_inline) return;
    refuse(i, "a 'static' data member defined in its class is a program-scope variable: it must be a constant "
              "(constant address space or constexpr); kernel threads share no mutable state outside buffers",
           "program-scope and static variables are constant");
  }

  // Declarations at namespace scope that are variables: in the constant address space
  // (or constexpr), initialised without running code.
  void check_program_scope(const DeclaredNames& names) const {
    std::size_t start = std::string::npos;
    bool assigned = false;  // the statement so far has `=` (at its own level)
    for (std::size_t i = 0; i < t_.size(); ++i) {
      if (scope_[i] != Scope::namespace_ || t_[i].kind == TokenKind::directive) continue;
      if (t_[i].is("}")) {
        start = std::string::npos;
        assigned = false;
        continue;
      }
      if (start == std::string::npos) start = i;
      if (t_[i].is("(") || t_[i].is("[")) {  // `static_assert((T{1} * T{2}).x == 2)`: not a scope
        i = matching(t_, i);
        continue;
      }
      if (t_[i].is("=")) assigned = true;
      if (t_[i].is("{")) {
        const std::size_t close = matching(t_, i);
        if (brace_kind_[i] == Scope::namespace_) {
          start = std::string::npos;  // its contents are statements of their own
          assigned = false;
          continue;
        }
        // A function body ends the definition; after `=` a body is a lambda's, in an initializer.
        if (brace_kind_[i] == Scope::block && !assigned) start = std::string::npos;
        i = close;
        continue;
      }
      if (t_[i].is(";")) {
        check_declaration(start, i, names);
        start = std::string::npos;
        assigned = false;
      }
    }
  }

  void check_declaration(std::size_t begin, std::size_t end, const DeclaredNames& names) const {
    std::size_t j = begin;
    while (j < end && t_[j].is("[") && j + 1 < end && t_[j + 1].is("[")) j = matching(t_, j) + 1;
    if (j >= end) return;
    if (t_[j].is_identifier("template")) {
      // `template <class T> int S<T>::x = f();` defines a variable; other templates
      // (functions, classes, explicit instantiations) are not variables.
      if (j + 1 >= end || !t_[j + 1].is("<")) return;
      int angle = 0;
      for (++j; j < end; ++j) {
        if (t_[j].is("<")) ++angle;
        else if (t_[j].is(">")) --angle;
        else if (t_[j].is(">>")) angle -= 2;
        if (angle <= 0) break;
      }
      ++j;
      bool initialised = false;
      for (std::size_t k = j; k < end && !initialised; ++k) {
        if (t_[k].is("(") || t_[k].is("{")) return;
        initialised = t_[k].is("=");
      }
      if (!initialised) return;
    }
    static const auto& not_variables = *new std::set<std::string>{"template", "using", "typedef", "static_assert",
                                                        "namespace", "friend", "extern"};
    if (not_variables.count(t_[j].text)) return;
    bool is_constant = false, is_class = false;
    std::size_t name = std::string::npos;
    for (std::size_t k = j; k < end; ++k) {
      const Token& x = t_[k];
      if (x.is_identifier("constant") || x.is_identifier("constexpr")) is_constant = true;
      if (x.is_identifier("struct") || x.is_identifier("class") || x.is_identifier("union") || x.is_identifier("enum"))
        is_class = true;
      if (x.kind == TokenKind::identifier && k + 1 <= end && name == std::string::npos && !is_keyword(x.text) &&
          (t_[k + 1].is("=") || t_[k + 1].is(";") || t_[k + 1].is("[") || t_[k + 1].is("{") || t_[k + 1].is(",") ||
           t_[k + 1].is("(")))
        name = k;
      if (x.is("{") || x.is("(") || x.is("[")) k = matching(t_, k);
    }
    if (is_class) {
      // `struct S { ... };` declares a type; `struct S { ... } s;` a variable too.
      std::size_t close = std::string::npos;
      for (std::size_t k = j; k < end; ++k)
        if (t_[k].is("{")) close = k = matching(t_, k);
      bool declarator = false;
      for (std::size_t k = close == std::string::npos ? end : close + 1; k < end; ++k)
        declarator = declarator || t_[k].kind == TokenKind::identifier;
      if (close == std::string::npos || !declarator) return;
      name = close + 1;
    } else if (name != std::string::npos && t_[name + 1].is("(") && names.prototypes.count(t_[name].text)) {
      return;  // a function prototype (the call rules look at it)
    }
    if (name == std::string::npos) name = j;
    for (std::size_t k = j; k + 2 < end; ++k)
      if (t_[k].is("[") && t_[k + 1].is("[") && builtin_from_attribute(t_[k + 2].text) != Builtin::none)
        refuse(name, "program-scope built-in variable '" + t_[name].text + "' ([[" + t_[k + 2].text +
                         "]] outside a kernel, MSL 3.2) is not supported: declare it as a parameter of the kernel "
                         "and pass it on",
               "program-scope and static variables are constant");
    if (!is_constant) {
      refuse(name, "program-scope variable '" + t_[name].text + "' must be declared in the constant address space "
                   "(MSL spec §4.2): kernels share no mutable global state",
             "program-scope and static variables are constant");
    }
    // Dynamic initialisation: a call to a source function that is not constexpr (a
    // constexpr variable's initialiser is checked by the compiler itself).
    for (std::size_t k = j; k < end; ++k)
      if (t_[k].is_identifier("constexpr")) return;
    for (std::size_t k = j; k + 1 < end; ++k) {
      if (t_[k].kind != TokenKind::identifier || k == name || !names.functions.count(t_[k].text) ||
          !(t_[k + 1].is("(") || t_[k + 1].is("{") || (k > j && t_[k - 1].kind == TokenKind::identifier)))
        continue;
      bool constexpr_definition = false;
      for (const auto& f : names.definitions)
        if (f.name == t_[k].text && f.is_constexpr) constexpr_definition = true;
      if (!constexpr_definition)
        refuse(k, "program-scope constant '" + t_[name].text + "' is initialised by calling '" + t_[k].text +
                      "', which is not constexpr: an MSL program-scope initializer must be a constant expression "
                      "(spec §4.2), nothing may run before a kernel does",
               "program-scope and static variables are constant");
    }
  }
};

}  // namespace

// The integer builtins of Apple's clang that production MSL calls (MLX's fft.h and
// hadamard.h: __builtin_ctz in constant expressions); the host compiler has them, and the
// CUDA prelude defines them (metal_builtins_cuda.h). Every other builtin is refused.
bool is_allowed_builtin(const std::string& id) {
  static const auto& allowed = *new std::set<std::string>{
      "__builtin_ctz", "__builtin_ctzl", "__builtin_ctzll", "__builtin_clz", "__builtin_clzl", "__builtin_clzll",
      "__builtin_popcount", "__builtin_popcountl", "__builtin_popcountll", "__builtin_expect", "__builtin_assume"};
  return allowed.count(id) != 0;
}

void check_msl_rules(const std::vector<Token>& tokens, const std::string& source, bool checked) {
  check_keyword_names(tokens, source);
  RuleChecker(tokens, source).run();
  check_implementation_rules(tokens, source, checked);
  check_memory_rules(tokens, source, checked);
  check_pointer_spaces(tokens, source);
  check_vector_element_addresses(tokens, source);
}

}  // namespace metalcall::msl
