// Which kernels may reach a barrier or a SIMD-group function (see sync_reachability.hpp).
//
// Why the answer is safe. Code runs in a kernel only where the kernel, or code it runs,
// names it: a function by its name; a member function by its name after `.`, `->` or
// `::`; a constructor, destructor, member operator or conversion through an object of its
// class, which the kernel can only have by mentioning the class or something whose
// declaration (transitively) mentions it. So when every namespace-scope declaration that
// mentions a synchronising name, or a name some synchronising declaration declares, makes
// all the names it declares synchronising, a kernel that can reach a barrier mentions a
// synchronising name. The names a declaration declares are read generously: every
// identifier in a declarator position, and every other one that is not a keyword, a
// standard library name or a template parameter; where the cutting into declarations
// fails, declarations merge, which only adds names. The one code that C++ calls with no
// name the kernel must mention is a namespace-scope operator overload (and the begin/end
// of a range-for, the get of a structured binding): if one of those synchronises, every
// kernel of the source runs as fibers.
#include "msl/analysis/sync_reachability.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <map>
#include <set>

#include "msl/analysis/call_graph.hpp"  // is_keyword, matching
#include "msl/analysis/stdlib_names.hpp"
#include "msl/lex/token_text.hpp"

namespace metalcall::msl {

namespace {
// What a macro that pastes names mentions: whatever the question, it may reach the answer.
const char* const kPastedName = "##";
}  // namespace

bool is_synchronising_name(const std::string& id) {
  static const auto& names = *new std::set<std::string>{
      "threadgroup_barrier", "thread_elements", "make_filled_simdgroup_matrix", "mtl_rt",
      "__metal_get_thread_index_in_simdgroup"};
  // simd_vote and quad_vote are the ballots' result types, not functions.
  if (id == "simd_vote" || id == "quad_vote") return false;
  return names.count(id) != 0 || id.rfind("simd_", 0) == 0 || id.rfind("quad_", 0) == 0 ||
         (id.rfind("simdgroup_", 0) == 0 && id != "simdgroup_index_in_threadgroup") ||
         id.rfind("__metal_simd_", 0) == 0;
}

namespace {

// One declaration at namespace scope (a macro definition counts as one).
struct Declaration {
  std::size_t begin = 0, end = 0;  // tokens [begin, end)
  std::set<std::string> mentions;  // every identifier in it
  std::set<std::string> declares;  // the names by which other code may reach it
  bool unnamed_entry = false;      // a namespace-scope operator (or begin/end/get)
};

bool is_open(const Token& k) { return k.kind == TokenKind::punct && (k.is("(") || k.is("[") || k.is("{")); }
bool is_close(const Token& k) { return k.kind == TokenKind::punct && (k.is(")") || k.is("]") || k.is("}")); }
bool is_class_key(const Token& k) {
  return k.is_identifier("struct") || k.is_identifier("class") || k.is_identifier("union") || k.is_identifier("enum");
}

// From `template` at i followed by `<`: the index of the head's closing `>` (or the first
// of a `>>`), or i when there is no head. Brackets inside are skipped whole.
std::size_t template_head_end(const std::vector<Token>& t, std::size_t i) {
  if (i + 1 >= t.size() || !t[i + 1].is("<")) return i;
  int angles = 0;
  for (std::size_t j = i + 1; j < t.size(); ++j) {
    if (is_open(t[j])) {
      j = matching(t, j);
      if (j >= t.size()) return i;
    } else if (t[j].is("<")) {
      ++angles;
    } else if (t[j].is(">") || t[j].is(">>")) {
      angles -= t[j].is(">") ? 1 : 2;
      if (angles <= 0) return j;
    } else if (t[j].is(";") || is_close(t[j])) {
      return i;  // not a head after all: read everything
    }
  }
  return i;
}

// `namespace a::b {`, `inline namespace n {`, `namespace {` at i: the index of its `{`, or 0.
std::size_t namespace_brace(const std::vector<Token>& t, std::size_t i) {
  if (t[i].is_identifier("inline")) ++i;
  if (i >= t.size() || !t[i].is_identifier("namespace")) return 0;
  for (std::size_t j = i + 1; j < t.size(); ++j) {
    if (t[j].is("{")) return j;
    if (t[j].is("[") && j + 1 < t.size() && t[j + 1].is("[")) j = matching(t, j);
    else if (!(t[j].kind == TokenKind::identifier || t[j].is("::"))) return 0;  // an alias: `namespace x = y;`
  }
  return 0;
}

// The end of the declaration that starts at i: after its `;` at depth 0, or after the `}`
// of a function body. A `}` ends it only when the head before its `{` has no `=` and no
// class key (a class or an initializer needs its `;`) and the next token starts another
// declaration; otherwise the declaration runs on to its `;`, which at worst merges two.
// A closer with no opener (a namespace's `}`) ends it before.
std::size_t declaration_end(const std::vector<Token>& t, std::size_t i) {
  int depth = 0;
  bool needs_semicolon = false;
  for (std::size_t j = i; j < t.size(); ++j) {
    const Token& k = t[j];
    if (k.kind == TokenKind::directive) continue;
    if (depth == 0 && k.is_identifier("template")) {
      j = template_head_end(t, j);
      continue;
    }
    if (is_open(k)) {
      ++depth;
    } else if (is_close(k)) {
      if (--depth < 0) return j;
      if (depth == 0 && k.is("}") && !needs_semicolon) {
        std::size_t next = j + 1;
        while (next < t.size() && t[next].kind == TokenKind::directive) ++next;
        if (next < t.size() && t[next].is(";")) return next + 1;
        if (next >= t.size() || t[next].kind == TokenKind::identifier || t[next].is("[") || t[next].is("}") ||
            t[next].is("::") || t[next].kind == TokenKind::directive)
          return j + 1;
      }
    } else if (depth == 0 && k.is(";")) {
      return j + 1;
    } else if (depth == 0 && (k.is("=") || is_class_key(k))) {
      needs_semicolon = true;
    }
  }
  return t.size();
}

// Whether the `(` … `)` at [open, close] is (part of) a declarator rather than a parameter
// list: `(*name)`, `(&name)`, `(S::*name)`, `(name)`.
bool declarator_parentheses(const std::vector<Token>& t, std::size_t open, std::size_t close) {
  std::size_t j = open + 1;
  while (j + 1 < close && t[j].kind == TokenKind::identifier && t[j + 1].is("::")) j += 2;
  if (j >= close) return false;
  if (t[j].is("*") || t[j].is("&") || t[j].is("&&") || t[j].is("^")) return true;
  return j + 1 == close && t[j].kind == TokenKind::identifier;
}

// After the `)` of a parameter list at `close`: the `{` of a function body (past
// qualifiers, attributes, a trailing return type, a constructor's initializers), or 0.
std::size_t function_body(const std::vector<Token>& t, std::size_t close, std::size_t end) {
  for (std::size_t j = close + 1; j < end; ++j) {
    const Token& x = t[j];
    if (x.is("{")) return j;
    if (x.is_identifier("const") || x.is_identifier("volatile") || x.is_identifier("override") ||
        x.is_identifier("final") || x.is_identifier("mutable") || x.is("&") || x.is("&&") ||
        x.is_identifier("thread") || x.is_identifier("device") || x.is_identifier("constant") ||
        x.is_identifier("threadgroup") || x.kind == TokenKind::directive)
      continue;
    if ((x.is_identifier("noexcept") || x.is_identifier("__attribute__")) && j + 1 < end && t[j + 1].is("(")) {
      j = matching(t, j + 1);
    } else if (x.is("[") && j + 1 < end && t[j + 1].is("[")) {
      j = matching(t, j);
    } else if (x.is("->") || (x.is(":") && !x.is("::"))) {
      // A trailing return type or member initializers: up to a `{` that follows a name,
      // `>`, `)` or `}` and is not an initializer's (`: a{x}, b(y) {`).
      for (++j; j < end; ++j) {
        if (t[j].is(";")) return 0;
        if (t[j].is("(")) {
          j = matching(t, j);
        } else if (t[j].is("{")) {
          if (t[j - 1].kind == TokenKind::identifier && !t[j - 1].is_identifier("decltype") && j + 1 < end &&
              !(t[j - 2].is(",") || t[j - 2].is(":")))
            return j;
          if (t[j - 1].is(")") || t[j - 1].is("}") || t[j - 1].is(">") || t[j - 1].is(">>")) return j;
          j = matching(t, j);
        }
      }
      return 0;
    } else {
      return 0;
    }
  }
  return 0;
}

// Whether the identifier at j stands where a declaration puts the name it declares.
bool declarator_position(const std::vector<Token>& t, std::size_t j, std::size_t end) {
  if (j + 1 >= end) return true;
  const Token& n = t[j + 1];
  if (n.is("(") || n.is(")") || n.is("[") || n.is("]") || n.is(";") || n.is("=") || n.is(",") || n.is("{") ||
      n.is("}") || (n.is(":") && !n.is("::")) || n.is_identifier("__attribute__"))
    return true;
  if (n.is("<")) {  // `f<float>(`: an explicit specialisation
    int angles = 0;
    for (std::size_t k = j + 1; k < end; ++k) {
      if (t[k].is("(") && angles > 0) k = matching(t, k);
      else if (t[k].is("<")) ++angles;
      else if (t[k].is(">") || t[k].is(">>")) angles -= t[k].is(">") ? 1 : 2;
      else if (t[k].is(";") || t[k].is("{") || t[k].is("}")) return false;
      if (angles <= 0) return k + 1 < end && t[k + 1].is("(");
    }
  }
  return false;
}

class DeclarationReader {
 public:
  DeclarationReader(const std::vector<Token>& t, Declaration& d) : t_(t), d_(d) {}

  void read() {
    // Attributes run no code: `[[simdgroup_index_in_threadgroup]]` names a builtin, not a call.
    for (std::size_t j = d_.begin; j < d_.end; ++j) {
      if (t_[j].is("[") && j + 1 < d_.end && t_[j + 1].is("[")) j = std::min(matching(t_, j), d_.end);
      else if (t_[j].kind == TokenKind::identifier) d_.mentions.insert(t_[j].text);
    }
    // Every template head's names are parameters: uses of them declare nothing.
    for (std::size_t j = d_.begin; j < d_.end; ++j) {
      if (!t_[j].is_identifier("template")) continue;
      const std::size_t close = template_head_end(t_, j);
      for (std::size_t k = j + 1; k < close; ++k)
        if (t_[k].kind == TokenKind::identifier) parameters_.insert(t_[k].text);
    }
    declared_in(d_.begin, d_.end);
  }

 private:
  // The names declared in [from, to): outside parameter lists, function bodies,
  // initializers, attributes and template heads.
  void declared_in(std::size_t from, std::size_t to) {
    std::size_t head = from;  // where the current member's declaration began
    int braces = 0;           // class bodies open around j
    for (std::size_t j = from; j < to; ++j) {
      const Token& k = t_[j];
      if (k.kind == TokenKind::directive) continue;
      if (k.is("[") && j + 1 < to && t_[j + 1].is("[")) {
        j = std::min(matching(t_, j), to);
      } else if (k.is_identifier("template")) {
        j = template_head_end(t_, j);
      } else if (k.is("(")) {
        const std::size_t close = std::min(matching(t_, j), to);
        const bool operand = j > from && (t_[j - 1].is_identifier("decltype") || t_[j - 1].is_identifier("alignas") ||
                                          t_[j - 1].is_identifier("__attribute__") || t_[j - 1].is_identifier("sizeof") ||
                                          t_[j - 1].is_identifier("alignof") || t_[j - 1].is_identifier("noexcept") ||
                                          t_[j - 1].is_identifier("static_assert"));
        if (!operand && declarator_parentheses(t_, j, close)) {
          declared_in(j + 1, close);
        } else if (!operand && !class_head(head, j)) {
          // A function's parameter list: its body (if any) is not read for declarations.
          if (const std::size_t body = function_body(t_, close, to)) {
            j = std::min(matching(t_, body), to);
            head = j + 1;
            continue;
          }
        }
        j = close;
      } else if (k.is("=") && !(j > from && t_[j - 1].is_identifier("operator"))) {
        j = initializer_end(j, to) - 1;  // an initializer declares nothing
      } else if (k.is("{")) {
        ++braces;
        head = j + 1;
      } else if (k.is("}")) {
        --braces;
        head = j + 1;
      } else if (k.is(";")) {
        head = j + 1;
      } else if (k.kind == TokenKind::identifier) {
        identifier(j, to, braces == 0);
      }
    }
  }

  void identifier(std::size_t j, std::size_t to, bool namespace_scope) {
    const std::string& name = t_[j].text;
    // At namespace scope even `S::operator+` counts: `ns::operator+` is a free one.
    if (namespace_scope &&
        (name == "operator" || ((name == "begin" || name == "end" || name == "get") && declarator_position(t_, j, to))))
      d_.unnamed_entry = true;
    if (is_class_key(t_[j])) {  // the class's (or enum's) name, however it is spelled
      std::size_t n = j + 1;
      while (n < to) {
        if (t_[n].is("[") && n + 1 < to && t_[n + 1].is("[")) n = matching(t_, n) + 1;
        else if ((t_[n].is_identifier("alignas") || t_[n].is_identifier("__attribute__")) && n + 1 < to && t_[n + 1].is("("))
          n = matching(t_, n + 1) + 1;
        else if (t_[n].is_identifier("class") || t_[n].is_identifier("struct")) ++n;  // enum class
        else if (n + 1 < to && t_[n].kind == TokenKind::identifier && t_[n + 1].is("::")) n += 2;
        else break;
      }
      if (n < to && t_[n].kind == TokenKind::identifier) d_.declares.insert(t_[n].text);
      return;
    }
    if (is_keyword(name)) return;
    if (declarator_position(t_, j, to) || qualifies_declarator(j, to) ||
        !(stdlib_names().count(name) || parameters_.count(name)))
      d_.declares.insert(name);
  }

  // Whether the identifier at j is the class of an out-of-class member's declarator
  // (`S::f(`, `S::operator()`, `S::~S(`, `S::count =`), even if its name is also a word of
  // the standard library's (`metal::float4 x` qualifies a type, not a declarator).
  bool qualifies_declarator(std::size_t j, std::size_t to) const {
    if (j + 2 >= to || !t_[j + 1].is("::")) return false;
    const Token& member = t_[j + 2];
    return member.is_identifier("operator") || member.is("~") ||
           (member.kind == TokenKind::identifier && declarator_position(t_, j + 2, to));
  }

  // Whether the declaration that began at `head` names a class key before `at` (`struct
  // S : decltype(x) {` is a class, not a function).
  bool class_head(std::size_t head, std::size_t at) const {
    for (std::size_t j = head; j < at; ++j) {
      if (t_[j].is_identifier("template")) j = template_head_end(t_, j);  // `template <class T>`
      else if (is_class_key(t_[j])) return true;
    }
    return false;
  }

  // The `,` or `;` (or unmatched closer) that ends the initializer after the `=` at j.
  std::size_t initializer_end(std::size_t j, std::size_t to) const {
    for (std::size_t k = j + 1; k < to; ++k) {
      if (is_open(t_[k])) k = matching(t_, k);
      else if (t_[k].is(",") || t_[k].is(";") || is_close(t_[k])) return k;
    }
    return to;
  }

  const std::vector<Token>& t_;
  Declaration& d_;
  std::set<std::string> parameters_;
};

// `#define NAME(...) body`: a declaration of NAME that mentions the body's words.
bool read_macro(const Token& directive, std::size_t index, Declaration* d) {
  const std::string& text = directive.text;
  const std::size_t p = text.find_first_not_of(" \t", 1);
  if (p == std::string::npos || text.compare(p, 6, "define") != 0) return false;
  std::vector<std::string> words;
  for (std::size_t i = p + 6; i < text.size();) {
    if (is_word_char(text[i]) && !std::isdigit(static_cast<unsigned char>(text[i]))) {
      std::size_t j = i;
      while (j < text.size() && is_word_char(text[j])) ++j;
      words.push_back(text.substr(i, j - i));
      i = j;
    } else {
      ++i;
    }
  }
  if (words.empty()) return false;
  d->begin = index;
  d->end = index + 1;
  d->declares.insert(words[0]);
  d->mentions.insert(words.begin() + 1, words.end());
  // A pasted name (`simd_##op`, `CAT(threadgroup_, barrier)`) is not known from its
  // pieces: a macro that pastes mentions every name (kernels_reaching).
  if (text.find("##") != std::string::npos) d->mentions.insert(kPastedName);
  return true;
}

std::vector<Declaration> declarations(const std::vector<Token>& t) {
  std::vector<Declaration> out;
  for (std::size_t i = 0; i < t.size();) {
    if (t[i].kind == TokenKind::directive) {
      Declaration d;
      if (read_macro(t[i], i, &d)) out.push_back(std::move(d));
      ++i;
    } else if (t[i].is(";") || t[i].is("}")) {
      ++i;  // an empty declaration, a namespace's end
    } else if (const std::size_t brace = namespace_brace(t, i)) {
      i = brace + 1;
    } else {
      Declaration d;
      d.begin = i;
      d.end = std::max(declaration_end(t, i), i + 1);
      DeclarationReader(t, d).read();
      i = d.end;
      out.push_back(std::move(d));
    }
  }
  return out;
}

}  // namespace

std::vector<bool> fiber_kernels(const std::vector<Token>& t, const std::vector<ParsedKernel>& kernels) {
  return kernels_reaching(t, kernels, is_synchronising_name);
}

std::vector<bool> kernels_reaching(const std::vector<Token>& t, const std::vector<ParsedKernel>& kernels,
                                   const std::function<bool(const std::string&)>& seed) {
  std::vector<Declaration> decls = declarations(t);
  // Which declarations mention each name, to follow the chain from synchronising names.
  std::map<std::string, std::vector<std::size_t>> mentioned_by;
  std::vector<std::size_t> work;
  std::vector<bool> synchronises(decls.size(), false);
  for (std::size_t d = 0; d < decls.size(); ++d) {
    for (const auto& name : decls[d].mentions) {
      mentioned_by[name].push_back(d);
      // A declaration's own name is no use of it (a kernel or helper called simd_reduce).
      if (!synchronises[d] && (name == kPastedName || (seed(name) && !decls[d].declares.count(name)))) {
        synchronises[d] = true;
        work.push_back(d);
      }
    }
  }
  std::set<std::string> synchronising_names;
  bool every_kernel = false;
  while (!work.empty()) {
    const std::size_t d = work.back();
    work.pop_back();
    every_kernel = every_kernel || decls[d].unnamed_entry;
    for (const auto& name : decls[d].declares) {
      if (!synchronising_names.insert(name).second) continue;
      auto it = mentioned_by.find(name);
      if (it == mentioned_by.end()) continue;
      for (std::size_t user : it->second) {
        if (synchronises[user]) continue;
        synchronises[user] = true;
        work.push_back(user);
      }
    }
  }
  // The declaration holding token i; a token outside every declaration counts as synchronising.
  auto synchronises_at = [&](std::size_t i) {
    auto after = std::upper_bound(decls.begin(), decls.end(), i,
                                  [](std::size_t token, const Declaration& d) { return token < d.begin; });
    if (after == decls.begin()) return true;
    const std::size_t d = static_cast<std::size_t>(after - decls.begin()) - 1;
    return i < decls[d].end ? bool(synchronises[d]) : true;
  };
  std::vector<bool> out;
  for (const auto& k : kernels) {
    bool fibers = every_kernel || synchronises_at(k.body_open) || synchronises_at(k.name_token);
    if (k.instantiation) fibers = fibers || synchronises_at(k.declaration_begin);
    out.push_back(fibers);
  }
  return out;
}

}  // namespace metalcall::msl
