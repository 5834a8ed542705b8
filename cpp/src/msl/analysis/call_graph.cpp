// Which functions a token stream defines and calls, and the MSL call rules (see
// call_graph.hpp). Token-level: a name is "declared" when the source spells a
// declaration of it; the object-file check (backends/cpu/object_check) is exact.
#include "msl/analysis/call_graph.hpp"

#include <map>

#include "msl/errors/front_end_stop.hpp"
#include "msl/errors/source_errors.hpp"
#include "msl/parse/type_names.hpp"

namespace metalcall::msl {

namespace {

const std::set<std::string>& keywords() {
  static const auto& k = *new std::set<std::string>{
      // C++ keywords that may stand before '('
      "if", "for", "while", "switch", "return", "sizeof", "alignof", "alignas", "decltype", "static_assert",
      "noexcept", "catch", "throw", "typeid", "operator", "new", "delete", "case", "else", "do", "auto", "this",
      "template", "typename", "const", "volatile", "static_cast", "reinterpret_cast", "const_cast", "dynamic_cast",
      "explicit", "using", "namespace", "struct", "class", "union", "enum", "typedef", "constexpr", "inline",
      "static", "extern", "virtual", "friend", "public", "private", "protected", "goto", "try", "asm", "default",
      "break", "continue", "mutable", "register", "thread_local", "true", "false", "nullptr", "and", "or", "not",
      "defined", "_Pragma", "__attribute__",
      // fundamental types (functional casts: `float(x)`)
      "void", "bool", "char", "short", "int", "long", "float", "double", "signed", "unsigned", "wchar_t",
      "char16_t", "char32_t",
      // MSL function qualifiers and address spaces
      "kernel", "vertex", "fragment", "device", "constant", "threadgroup", "thread", "threadgroup_imageblock",
      "ray_data", "object_data", "coherent" /* MSL 3.2: `coherent(device)` */};
  return k;
}

bool is_reserved(const std::string& id) {
  return id.size() > 1 && id[0] == '_' && (id[1] == '_' || (id[1] >= 'A' && id[1] <= 'Z'));
}

// After `)`: qualifiers, attributes and a trailing return type, up to the body's '{'
// (or a constructor's ':' initializer list). Returns the '{' or npos.
std::size_t body_after_parameters(const std::vector<Token>& t, std::size_t close) {
  std::size_t j = close + 1;
  while (j < t.size()) {
    const Token& x = t[j];
    if (x.is("{")) return j;
    if (x.is_identifier("const") || x.is_identifier("volatile") || x.is_identifier("override") ||
        x.is_identifier("final") || x.is("&") || x.is("&&") || x.is_identifier("mutable") ||
        x.is_identifier("thread") || x.is_identifier("device") || x.is_identifier("constant") ||
        x.is_identifier("threadgroup")) {
      ++j;
    } else if (x.is_identifier("noexcept")) {
      j = (j + 1 < t.size() && t[j + 1].is("(")) ? matching(t, j + 1) + 1 : j + 1;
    } else if (x.is("[") && j + 1 < t.size() && t[j + 1].is("[")) {
      j = matching(t, j) + 1;
    } else if (x.is("->")) {  // trailing return type: up to the '{'
      for (++j; j < t.size() && !t[j].is("{") && !t[j].is(";") && !t[j].is("="); ++j) {
        if (t[j].is("(")) j = matching(t, j);
      }
    } else if (x.is(":") && !x.is("::")) {  // constructor initializers: `: a(x), b{y} {`
      for (++j; j < t.size();) {
        while (j < t.size() && (t[j].kind == TokenKind::identifier || t[j].is("::") || t[j].is("<") ||
                                t[j].is(">") || t[j].is(",")))
          ++j;
        if (j < t.size() && (t[j].is("(") || t[j].is("{"))) {
          const std::size_t after = matching(t, j) + 1;
          if (after < t.size() && t[after].is("{")) return after;
          if (after < t.size() && t[after].is(",")) {
            j = after + 1;
            continue;
          }
        }
        return std::string::npos;
      }
      return std::string::npos;
    } else {
      return std::string::npos;
    }
  }
  return std::string::npos;
}

// A parameter list, not an expression list: empty, `void`, or pieces that start with a
// type-like word and are not just one unknown name (`float4 v(x, y)` initialises a variable).
// `T (*)[N]`, `T (*name)[N]`, `T (&name)[N]`, `T (* const name)[N]`: the parenthesised declarator of a
// pointer or reference to an array after a type (an unnamed parameter's in a prototype), not a call.
bool declarator_group(const std::vector<Token>& t, std::size_t open) {
  if (open == 0 || open + 1 >= t.size() || !(t[open + 1].is("*") || t[open + 1].is("&") || t[open + 1].is("&&")))
    return false;
  const Token& b = t[open - 1];
  if (!(b.is(">") || (b.kind == TokenKind::identifier && (!is_keyword(b.text) || b.is_identifier("float") ||
                                                         b.is_identifier("int") || b.is_identifier("bool") ||
                                                         b.is_identifier("char") || b.is_identifier("short") ||
                                                         b.is_identifier("long") || b.is_identifier("double") ||
                                                         b.is_identifier("unsigned") || b.is_identifier("const")))))
    return false;
  const std::size_t close = matching(t, open);
  return close + 1 < t.size() && t[close + 1].is("[");
}

bool looks_like_parameters(const std::vector<Token>& t, std::size_t open, std::size_t close,
                           const std::set<std::string>& types) {
  if (close == open + 1) return true;
  std::size_t piece = open + 1;
  int depth = 0;
  for (std::size_t j = open + 1; j <= close; ++j) {
    if (j < close && (t[j].is("(") || t[j].is("[") || t[j].is("{") || t[j].is("<"))) ++depth;
    else if (j < close && (t[j].is(")") || t[j].is("]") || t[j].is("}") || t[j].is(">"))) --depth;
    if (j < close && !(depth == 0 && t[j].is(","))) continue;
    const std::size_t n = j - piece;
    if (n == 0) return false;
    const Token& first = t[piece];
    if (first.kind != TokenKind::identifier) return false;
    const bool type_word = keywords().count(first.text) || types.count(first.text) || is_renamed_type(first.text);
    if (n == 1 && !type_word) return false;  // a lone unknown name: an argument
    const Token& second = t[piece + 1];
    if (!type_word && !(second.kind == TokenKind::identifier || second.is("*") || second.is("&") ||
                        second.is("&&") || second.is("<") || second.is("::")))
      return false;  // `p->alpha`, `a + b`: an expression
    for (std::size_t k = piece; k < j; ++k) {
      // An array declarator's extents (`float a[4]`, `thread float (*)[C + 1]`) after a name or `)`.
      if (t[k].is("[") && k > piece && (t[k - 1].is(")") || t[k - 1].kind == TokenKind::identifier)) {
        k = matching(t, k);
        continue;
      }
      if (t[k].kind == TokenKind::number || t[k].kind == TokenKind::string || t[k].is("+") || t[k].is("-") ||
          t[k].is("/") || t[k].is("(") || t[k].is("."))
        if (!(t[k].is("(") && k > piece && (t[k - 1].is("*") || declarator_group(t, k))))
          return false;  // not an expression unless a pointer declarator
    }
    piece = j + 1;
  }
  return true;
}

// The index after the attribute at i (`[[...]]` or `__attribute__((...))`), or i when none starts there.
std::size_t skip_attribute(const std::vector<Token>& t, std::size_t i) {
  if (t[i].is("[") && i + 1 < t.size() && t[i + 1].is("[")) return matching(t, i) + 1;
  if (t[i].is_identifier("__attribute__") && i + 1 < t.size() && t[i + 1].is("(")) return matching(t, i + 1) + 1;
  return i;
}

// From the '<' at `open`: the '(' right after its matching '>', or npos (a comparison,
// or template arguments not followed by a call or parameter list).
std::size_t after_template_arguments(const std::vector<Token>& t, std::size_t open) {
  int depth = 0;
  for (std::size_t j = open; j < t.size() && j < open + 64; ++j) {
    if (t[j].is("<")) ++depth;
    else if (t[j].is(">")) --depth;
    else if (t[j].is(">>")) depth -= 2;
    else if (t[j].is(";") || t[j].is("{") || t[j].is("}")) return std::string::npos;
    else if (t[j].is("(")) j = matching(t, j);
    if (depth <= 0) return depth == 0 && j + 1 < t.size() && t[j + 1].is("(") ? j + 1 : std::string::npos;
  }
  return std::string::npos;
}

// True when the identifier at i is the type a conversion function names: `operator NAME`,
// `operator const NAME` (cv-qualifiers may come between).
bool names_conversion_type(const std::vector<Token>& t, std::size_t i) {
  std::size_t k = i;
  while (k > 0 && (t[k - 1].is_identifier("const") || t[k - 1].is_identifier("volatile"))) --k;
  return k > 0 && t[k - 1].is_identifier("operator");
}

// True when the (possibly qualified) name at i is an entry of a constructor's member initializer
// list (`C(float r, float m) : re(r), im(m) {}`): its `(m) {` is followed by the constructor's
// body, but it defines no function. An entry follows the list's `:` or a `,` (no definition
// follows a comma); a constructor after an access specifier (`public: C() {}`) is a definition.
bool member_initializer(const std::vector<Token>& t, std::size_t i) {
  std::size_t k = i;
  while (k >= 2 && t[k - 1].is("::") && t[k - 2].kind == TokenKind::identifier) k -= 2;
  if (k == 0) return false;
  const Token& before = t[k - 1];
  if (before.is(",")) return true;
  if (!before.is(":")) return false;
  return !(k >= 2 && (t[k - 2].is_identifier("public") || t[k - 2].is_identifier("protected") ||
                      t[k - 2].is_identifier("private")));
}

}  // namespace

bool is_keyword(const std::string& id) { return keywords().count(id) > 0; }

std::size_t matching(const std::vector<Token>& t, std::size_t open) {
  poll_front_end_stop();  // the walks of every pass call it
  const std::string o = t[open].text;
  const std::string c = o == "(" ? ")" : o == "[" ? "]" : "}";
  int depth = 0;
  for (std::size_t j = open; j < t.size(); ++j) {
    if (t[j].is(o.c_str())) ++depth;
    else if (t[j].is(c.c_str()) && --depth == 0) return j;
  }
  return t.size();
}

std::size_t angle_closing(const std::vector<Token>& t, std::size_t open) {
  int depth = 0;
  for (std::size_t j = open; j < t.size(); ++j) {
    if (t[j].is("(") || t[j].is("[")) j = matching(t, j);
    else if (t[j].is("<")) ++depth;
    else if (t[j].is(">") && --depth == 0) return j;
    else if (t[j].is(">>") && (depth -= 2) <= 0) return j;
    else if (t[j].is(";") || t[j].is("{")) break;
  }
  return t.size();
}

DeclaredNames declared_names(const std::vector<Token>& t) {
  DeclaredNames d;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (const std::size_t after = skip_attribute(t, i); after != i) {
      i = after - 1;
      continue;
    }
    const Token& x = t[i];
    if (x.kind == TokenKind::directive) {
      std::size_t p = x.text.find_first_not_of(" \t", 1);
      if (p != std::string::npos && x.text.compare(p, 6, "define") == 0) {
        p = x.text.find_first_not_of(" \t", p + 6);
        std::size_t e = p;
        while (e < x.text.size() && (std::isalnum(static_cast<unsigned char>(x.text[e])) || x.text[e] == '_')) ++e;
        if (p != std::string::npos && e > p) d.macros.insert(x.text.substr(p, e - p));
      }
      continue;
    }
    if (x.kind != TokenKind::identifier) continue;
    const bool member = i > 0 && (t[i - 1].is(".") || t[i - 1].is("->"));
    const Token* next = i + 1 < t.size() ? &t[i + 1] : nullptr;
    // Types: struct/class/union/enum NAME, template parameters, aliases.
    if ((x.text == "struct" || x.text == "class" || x.text == "union" || x.text == "enum" || x.text == "typename") &&
        next && next->kind == TokenKind::identifier) {
      std::size_t n = i + 1;
      if (t[n].text == "class" || t[n].text == "struct") ++n;  // enum class
      if (n < t.size() && t[n].kind == TokenKind::identifier) d.types.insert(t[n].text);
    }
    if (x.text == "using" && next && next->kind == TokenKind::identifier && i + 2 < t.size() && t[i + 2].is("="))
      d.types.insert(next->text);
    if (x.text == "typedef") {
      std::size_t j = i + 1;
      int depth = 0;
      std::size_t last = std::string::npos;
      for (; j < t.size() && !(depth == 0 && t[j].is(";")); ++j) {
        if (t[j].is("(") || t[j].is("[") || t[j].is("{")) ++depth;
        else if (t[j].is(")") || t[j].is("]") || t[j].is("}")) --depth;
        else if (t[j].kind == TokenKind::identifier && depth <= 1) last = j;
      }
      if (last != std::string::npos) d.types.insert(t[last].text);
    }
    if (member || is_keyword(x.text)) continue;
    // `operator TYPE(...)`, `operator const TYPE<...>(...)`: a conversion function names a type,
    // not a function called TYPE (MLX's complex_t: `operator vec<T, 2>() const thread`).
    if (names_conversion_type(t, i)) continue;
    if (next && next->is("<") && i > 0 && !t[i - 1].is("::")) {
      // `name<float>(...) {`: an explicit specialisation is a definition of name.
      const std::size_t open = after_template_arguments(t, i + 1);
      if (open != std::string::npos) {
        const std::size_t close = matching(t, open);
        const std::size_t body = close < t.size() ? body_after_parameters(t, close) : std::string::npos;
        if (body != std::string::npos && !member_initializer(t, i)) {
          d.functions.insert(x.text);
          d.definitions.push_back({x.text, i, body, matching(t, body), false});
          continue;
        }
      }
    }
    if (!next || !next->is("(")) {
      d.others.insert(x.text);
      continue;
    }
    // NAME ( ... ): a definition, a prototype, or a call.
    const std::size_t close = matching(t, i + 1);
    if (close >= t.size()) continue;
    const std::size_t body = body_after_parameters(t, close);
    if (body != std::string::npos && !member_initializer(t, i)) {
      FunctionDefinition f;
      f.name = x.text;
      f.name_token = i;
      f.body_open = body;
      f.body_close = matching(t, body);
      for (std::size_t k = i; k > 0 && i - k < 12; --k) {
        const Token& b = t[k - 1];
        if (b.is(";") || b.is("}") || b.is("{")) break;
        if (b.is_identifier("constexpr")) f.is_constexpr = true;
      }
      d.functions.insert(f.name);
      d.definitions.push_back(f);
      continue;
    }
    const bool declarator_position = i > 0 && (t[i - 1].kind == TokenKind::identifier || t[i - 1].is("*") ||
                                               t[i - 1].is("&") || t[i - 1].is(">")) &&
                                     !(t[i - 1].kind == TokenKind::identifier && is_keyword(t[i - 1].text) &&
                                       !t[i - 1].is_identifier("void") && !t[i - 1].is_identifier("int") &&
                                       !t[i - 1].is_identifier("float") && !t[i - 1].is_identifier("bool") &&
                                       !t[i - 1].is_identifier("char") && !t[i - 1].is_identifier("long") &&
                                       !t[i - 1].is_identifier("short") && !t[i - 1].is_identifier("double") &&
                                       !t[i - 1].is_identifier("unsigned") && !t[i - 1].is_identifier("signed") &&
                                       !t[i - 1].is_identifier("const") && !t[i - 1].is_identifier("auto"));
    std::size_t after = close + 1;
    while (after < t.size() && (t[after].is_identifier("const") || t[after].is_identifier("noexcept"))) ++after;
    // `constexpr sampler s(coord::normalized, filter::linear);` is an object built by its
    // constructor, not a prototype: a constexpr declaration without a body is never one.
    bool constexpr_object = false;
    for (std::size_t k = i; k > 0 && i - k < 12; --k) {
      const Token& b = t[k - 1];
      if (b.is(";") || b.is("}") || b.is("{")) break;
      if (b.is_identifier("constexpr")) constexpr_object = true;
    }
    const bool parameters = looks_like_parameters(t, i + 1, close, d.types);
    if (declarator_position && !constexpr_object && after < t.size() && (t[after].is(";") || t[after].is("=")) &&
        parameters)
      d.prototypes.insert(x.text);
    // `float3x3 m(2.0f);`, `half hb(1);`: a variable built by its constructor after a type's name
    // declares that name, used again or not (one never named again was "a call to 'hb'" before
    // 2026-12-05).
    const Token& before = t[i > 0 ? i - 1 : i];
    if (i > 0 && !parameters && before.kind == TokenKind::identifier &&
        (is_renamed_type(before.text) || d.types.count(before.text) || before.is_identifier("int") ||
         before.is_identifier("float") || before.is_identifier("bool") || before.is_identifier("char") ||
         before.is_identifier("short") || before.is_identifier("long") || before.is_identifier("unsigned") ||
         before.is_identifier("signed") || before.is_identifier("double") || before.is_identifier("auto")))
      d.others.insert(x.text);
  }
  return d;
}

void check_calls(const std::vector<Token>& t, const std::string& source, const DeclaredNames& names,
                 const std::set<std::string>& stdlib) {
  auto known = [&](const std::string& n) { return names.declares(n) || stdlib.count(n) > 0 || is_renamed_type(n); };
  // A prototype of a function that the source never defines names host code (libc...).
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (t[i].kind != TokenKind::identifier || !names.prototypes.count(t[i].text) || !t[i + 1].is("(")) continue;
    if (names.functions.count(t[i].text) || stdlib.count(t[i].text) || names.types.count(t[i].text)) continue;
    throw rule_error(source, t[i],
                     "function '" + t[i].text + "' is declared but not defined in this source: an MSL kernel "
                     "calls only its own functions and the Metal standard library",
                     "functions are defined in the source");
  }
  // Each call site.
  std::set<std::size_t> definition_tokens;
  for (const auto& f : names.definitions) definition_tokens.insert(f.name_token);
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (const std::size_t after = skip_attribute(t, i); after != i) {
      i = after - 1;
      continue;
    }
    const Token& x = t[i];
    if (x.kind != TokenKind::identifier || !t[i + 1].is("(") || is_keyword(x.text) || is_reserved(x.text)) continue;
    if (i > 0 && (t[i - 1].is(".") || t[i - 1].is("->"))) continue;  // a member: its type's
    if (definition_tokens.count(i) || matching(t, i + 1) >= t.size()) continue;  // unbalanced: the compiler says why
    if (!known(x.text)) {
      throw rule_error(source, x,
                       "call to '" + x.text + "', which is neither defined in this source nor part of the Metal "
                       "standard library (MSL has no C or C++ host library)",
                       "calls only to source functions and the Metal standard library");
    }
  }
}

}  // namespace metalcall::msl
