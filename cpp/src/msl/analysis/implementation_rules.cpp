// The rules that keep metalcall's implementation out of the user's reach (see
// implementation_rules.hpp).
#include "msl/analysis/implementation_rules.hpp"

#include <map>
#include <set>

#include "msl/analysis/call_graph.hpp"
#include "msl/analysis/stdlib_names.hpp"
#include "msl/errors/source_errors.hpp"

namespace metalcall::msl {

// The prelude's internals and the generated code live under the prefixes mtl_, metalcall_
// and METALCALL_ (mtl_checked, mtl_rt::region_count, an entry point's mtl_L; reserved
// spellings __metalcall… and __METALCALL… too: the stop checks' __metalcall_stop), and the
// prelude's own macros are METAL_ ones other than Apple's METAL_FUNC. Naming them could turn
// checked mode off (`a.mtl_count = 1000`) or reach host code through a macro's token pasting
// (METAL_LIBM_DOUBLE(trap) is __builtin_trap); reserving them leaves every other name free.
const char* implementation_name(const std::string& id) {
  for (const char* prefix : {"mtl_", "metalcall_", "METALCALL_", "__metalcall", "__METALCALL", "__mtl"})
    if (id.rfind(prefix, 0) == 0)
      return "is reserved for metalcall's implementation (names beginning with mtl_, metalcall_ or METALCALL_, "
             "and __metalcall or __METALCALL, belong to its prelude and generated code); rename it";
  if (id.rfind("METAL_", 0) == 0 && id != "METAL_FUNC" && prelude_macro_names().count(id))
    return "is a macro of metalcall's prelude, not part of MSL; rename it";
  return nullptr;
}

namespace {

bool opens_class(const std::vector<Token>& t, std::size_t i) {
  return t[i].is_identifier("struct") || t[i].is_identifier("class") || t[i].is_identifier("union");
}

// A '{' inside a class body that opens a member function's body (or a lambda's), not a
// nested class or an initializer.
bool opens_function_body(const std::vector<Token>& t, std::size_t open) {
  if (open == 0) return false;
  const Token& b = t[open - 1];
  return b.is(")") || b.is("]") || b.is_identifier("const") || b.is_identifier("noexcept") ||
         b.is_identifier("override") || b.is_identifier("final") || b.is_identifier("mutable");
}

}  // namespace

std::vector<ClassBody> class_bodies(const std::vector<Token>& t) {
  std::vector<ClassBody> bodies;
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (!opens_class(t, i)) continue;
    std::size_t j = i + 1;
    std::string name;
    while (j < t.size() && t[j].is("[") && j + 1 < t.size() && t[j + 1].is("[")) j = matching(t, j) + 1;
    if (j < t.size() && t[j].kind == TokenKind::identifier) name = t[j++].text;
    while (j < t.size() && !t[j].is("{") && !t[j].is(";") && !t[j].is(")") && !t[j].is(",") && !t[j].is(">")) ++j;
    if (j >= t.size() || !t[j].is("{")) continue;  // a declaration, an elaborated type, a template argument
    bodies.push_back({name, t[i].is_identifier("union"), j, matching(t, j)});
  }
  return bodies;
}

namespace {

// The tokens of a class body that declare its members (nested class bodies included, member
// functions' bodies and every parenthesis skipped): a `*` or `&` there declares a pointer or
// a reference; an identifier there may name a member's type.
std::vector<std::size_t> member_tokens(const std::vector<Token>& t, const ClassBody& c) {
  std::vector<std::size_t> out;
  for (std::size_t k = c.open + 1; k < c.close && k < t.size(); ++k) {
    if (t[k].is("(") || (t[k].is("{") && opens_function_body(t, k)) || (t[k].is("[") && k + 1 < t.size() && t[k + 1].is("["))) {
      k = matching(t, k);
      continue;
    }
    out.push_back(k);
  }
  return out;
}

// Checked mode: pointer types its translation leaves plain pointers, whose accesses no bounds
// cover: a C array of `thread` pointers (its index is unchecked too). (A `thread` pointer type
// named by `using`, refused before 2026-12-03, is a checked pointer as a typedef's is.) Arrays
// of device, constant or threadgroup pointers (MLX's `const device T* xv[n]`) are checked
// arrays of checked pointers (checked_mode.cpp).
// (A pointer type given to a template, `W<thread float*>`, is a checked pointer: checked_mode.hpp.)
void refuse_unchecked_pointer_types(const std::vector<Token>& t, const std::string& source) {
  auto refuse = [&](std::size_t k, const std::string& what) {
    throw rule_error(source, t[k], what + " stays a plain pointer in the checked device's translation, so its accesses "
                                          "would not be checked; declare the pointer itself (a variable, member or parameter)",
                     "checked mode stays on");
  };
  for (std::size_t i = 1; i + 3 < t.size(); ++i) {
    // `thread float* ps[2]`: a pointer, a name, then an array's `[` (not of device, constant or
    // threadgroup pointers, MLX's `const device T* xv[n]`, ggml's `threadgroup float* shmem_f32[NR0]`).
    // (`thread T* operator [] (size_t i)`: an operator's name, not an array's.)
    if (t[i].is("*") && t[i + 1].kind == TokenKind::identifier && !t[i + 1].is_identifier("operator") && t[i + 2].is("[") &&
        !t[i + 3].is("[")) {
      bool space = false, other = false;  // (`thread const device T* p[n]`: a thread array of device pointers)
      std::size_t k = i;
      while (k > 0 && (t[k - 1].kind == TokenKind::identifier || t[k - 1].is("::"))) {
        --k;
        space = space || t[k].is_identifier("thread");
        other = other || t[k].is_identifier("device") || t[k].is_identifier("constant") || t[k].is_identifier("threadgroup");
      }
      if (space && !other && k > 0 && (t[k - 1].is(";") || t[k - 1].is("{") || t[k - 1].is("}") || t[k - 1].is("(") || t[k - 1].is(",")))
        refuse(i, "an array of pointers");
    }
  }
}

}  // namespace

void check_implementation_rules(const std::vector<Token>& t, const std::string& source, bool checked) {
  // `auto [a, b] = s;` (also `const auto& [a, b]`, `for (auto [k, v] : …)`): C++17 (MSL is
  // C++14-based), and the one way to reach a class's members without naming them.
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (!t[i].is_identifier("auto")) continue;
    std::size_t j = i + 1;
    while (j < t.size() && (t[j].is("&") || t[j].is("&&") || t[j].is_identifier("const") || t[j].is_identifier("volatile")))
      ++j;
    if (j < t.size() && t[j].is("[") && !(j + 1 < t.size() && t[j + 1].is("[")))
      throw rule_error(source, t[i], "structured bindings are C++17, not MSL (a C++14-based language); bind the members "
                                     "one by one", "no structured bindings");
  }
  if (!checked) return;
  // Checked mode: a union whose members overlap a pointer, and as_type to or from a type that
  // holds one, would make a checked pointer's base and bounds from any bits.
  const char* rule = "checked mode stays on";
  const std::string mode = " (checked mode: a checked pointer's base and bounds)";
  const std::vector<ClassBody> bodies = class_bodies(t);
  // Names that may hold a pointer: aliases of pointer types (`typedef device float* P;`), and
  // the source's classes with a pointer, reference or such member, transitively.
  std::set<std::string> holds_pointer;
  for (std::size_t i = 0; i + 2 < t.size(); ++i) {
    if (t[i].is_identifier("using") && t[i + 1].kind == TokenKind::identifier && t[i + 2].is("=")) {
      for (std::size_t k = i + 3; k < t.size() && !t[k].is(";"); ++k)
        if (t[k].is("*")) holds_pointer.insert(t[i + 1].text);
    } else if (t[i].is_identifier("typedef")) {
      std::size_t k = i + 1;
      bool star = false;
      for (; k + 1 < t.size() && !t[k + 1].is(";") && !t[k].is("("); ++k) star = star || t[k].is("*");
      if (star && k + 1 < t.size() && t[k].kind == TokenKind::identifier && t[k + 1].is(";")) holds_pointer.insert(t[k].text);
    }
  }
  auto pointer_member = [&](std::size_t k) {
    return t[k].is("*") || t[k].is("&") || t[k].is("&&") || (t[k].kind == TokenKind::identifier && holds_pointer.count(t[k].text));
  };
  for (bool grew = true; grew;) {
    grew = false;
    for (const ClassBody& c : bodies) {
      if (c.name.empty() || holds_pointer.count(c.name)) continue;
      for (std::size_t k : member_tokens(t, c)) {
        if (pointer_member(k)) {
          holds_pointer.insert(c.name);
          grew = true;
          break;
        }
      }
    }
  }
  // `as_type<S>(bits)`: S's names, and pointers among its template arguments
  // (`as_type<W<device float*>>`; as_type to a pointer itself is memory_rules.hpp's).
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (!t[i].is_identifier("as_type") || !t[i + 1].is("<")) continue;
    int depth = 0;
    for (std::size_t k = i + 1; k < t.size() && !t[k].is(";"); ++k) {
      if (t[k].is("<")) ++depth;
      else if (t[k].is(">") && --depth == 0) break;
      else if (t[k].is(">>") && (depth -= 2) <= 0) break;
      else if (t[k].kind == TokenKind::identifier ? holds_pointer.count(t[k].text) > 0 : depth > 1 && pointer_member(k))
        throw rule_error(source, t[k], "as_type to a type that holds a pointer would make that pointer from any bits" + mode,
                         rule);
    }
  }
  refuse_unchecked_pointer_types(t, source);
  // `this[k]`, `this + k`, `(thread uchar*)this`, `reinterpret_cast<…>(this)`: an object's own
  // address is a plain pointer, so arithmetic on it, or a pointer cast of it, reached memory no
  // bounds covered (`this[1 << 20].a = x` wrote anywhere before 2026-12-03). `this->m`, `*this`
  // (`*this + k` too: the object's operator) and comparisons stay.
  for (std::size_t i = 2; i + 1 < t.size(); ++i) {
    if (!t[i].is_identifier("this")) continue;
    const Token& n = t[i + 1];
    // `*this + k` is the object's operator+ (unary * binds first); `*this[k]` indexes `this`.
    const bool dereferenced = t[i - 1].is("*");
    const bool arithmetic =
        n.is("[") || (!dereferenced && (n.is("+") || n.is("-") || n.is("+=") || n.is("-=")));
    const bool c_cast = t[i - 1].is(")") && (t[i - 2].is("*") || t[i - 2].is("&"));
    bool named_cast = t[i - 1].is("(") && t[i - 2].is(">") && n.is(")");
    if (named_cast) {
      // CRTP's `static_cast<const thread D*>(this)->impl()`: a static_cast of a class pointer
      // reaches only its bases and derived classes (C++ refuses any other target but void*), as
      // `static_cast<D&>(*this)` does, which stays allowed. Only a member access through it
      // (`->`): the pointer itself, kept (`auto p = …`), would be a plain one. reinterpret_cast,
      // const_cast and a cast to void* stay refused (all refused before 2026-12-05).
      int depth = 0;
      std::size_t open = i - 2;
      bool to_void = false;
      for (; open > 0; --open) {
        if (t[open].is(">")) ++depth;
        else if (t[open].is(">>")) depth += 2;
        else if (t[open].is("<") && --depth == 0) break;
        else if (t[open].is_identifier("void")) to_void = true;
      }
      const bool member_access = i + 2 < t.size() && t[i + 2].is("->");
      if (open > 0 && depth == 0 && member_access && t[open - 1].is_identifier("static_cast") && !to_void)
        named_cast = false;
    }
    if (arithmetic || c_cast || named_cast)
      throw rule_error(source, t[i], "arithmetic on 'this' or a pointer cast of it reaches memory beside the object, which "
                                     "no bounds cover (checked mode: a plain pointer)", rule);
  }
  for (const ClassBody& c : bodies) {
    if (!c.is_union) continue;
    for (std::size_t k : member_tokens(t, c)) {
      if (pointer_member(k))
        throw rule_error(source, t[k], "a union that holds a pointer makes it from its other members' bits" + mode, rule);
    }
  }
}

}  // namespace metalcall::msl
