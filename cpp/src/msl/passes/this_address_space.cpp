// Member functions qualified by the address space of `this` (see this_address_space.hpp).
#include "msl/passes/this_address_space.hpp"

#include <map>
#include <set>

#include "msl/errors/source_errors.hpp"
#include "msl/passes/address_space_overloads.hpp"

namespace metalcall::msl {

namespace {

bool is_space_word(const Token& tok) {
  return tok.kind == TokenKind::identifier &&
         (tok.text == "thread" || tok.text == "device" || tok.text == "threadgroup" || tok.text == "constant");
}

bool is_qualifier_word(const Token& tok) {
  return is_space_word(tok) || tok.is_identifier("const") || tok.is_identifier("volatile");
}

// What may follow a member function's qualifiers.
bool continues_declaration(const Token& tok) {
  return tok.is("{") || tok.is(";") || tok.is(":") || tok.is("=") || tok.is("->") || tok.is("&") || tok.is("&&") ||
         tok.is("[") || tok.is_identifier("noexcept") || tok.is_identifier("override") || tok.is_identifier("final");
}

std::size_t matching_open(const std::vector<Token>& t, std::size_t close, const char* open_text,
                          const char* close_text) {
  int depth = 0;
  for (std::size_t j = close + 1; j-- > 0;) {
    if (t[j].is(close_text)) ++depth;
    else if (t[j].is(open_text) && --depth == 0) return j;
  }
  return 0;
}

std::size_t matching_close(const std::vector<Token>& t, std::size_t open, const char* open_text,
                           const char* close_text) {
  int depth = 0;
  for (std::size_t j = open; j < t.size(); ++j) {
    if (t[j].is(open_text)) ++depth;
    else if (t[j].is(close_text) && --depth == 0) return j;
  }
  return t.size() - 1;
}

// The token that names the function whose parameter list opens at `open` (`B` of `B<T>(`).
std::size_t function_name(const std::vector<Token>& t, std::size_t open) {
  if (open == 0) return 0;
  std::size_t name = open - 1;
  if (t[name].is(">") && name > 0) {
    const std::size_t less = matching_open(t, name, "<", ">");
    if (less > 0) name = less - 1;
  }
  return name;
}

// The name of the class whose body encloses token `at`, or "".
std::string enclosing_class(const std::vector<Token>& t, std::size_t at) {
  int depth = 0;
  for (std::size_t j = at; j-- > 0;) {
    if (t[j].is("}")) {
      ++depth;
    } else if (t[j].is("{") && depth-- == 0) {
      for (std::size_t k = j; k-- > 0 && !t[k].is(";") && !t[k].is("}") && !t[k].is("{");)
        if ((t[k].is_identifier("struct") || t[k].is_identifier("class") || t[k].is_identifier("union")) &&
            k + 1 < t.size() && t[k + 1].kind == TokenKind::identifier)
          return t[k + 1].text;
      return "";
    }
  }
  return "";
}

// The first token of the declaration that holds token `at`.
std::size_t declaration_start(const std::vector<Token>& t, std::size_t at) {
  std::size_t start = at;
  while (start > 0 && !t[start - 1].is(";") && !t[start - 1].is("{") && !t[start - 1].is("}") &&
         !(t[start - 1].is(":") && start >= 2 && t[start - 2].kind == TokenKind::identifier &&
           (t[start - 2].text == "public" || t[start - 2].text == "private" || t[start - 2].text == "protected")))
    --start;
  return start;
}

// The last token of a member function declaration whose qualifiers end before `after`: its
// ';' or the closing brace of its body (past a constructor's initializers).
std::size_t declaration_end(const std::vector<Token>& t, std::size_t after) {
  std::size_t j = after;
  while (j < t.size() && !t[j].is(";") && !t[j].is("{")) {
    if (t[j].is(":")) {  // initializers: `: v(x), w{y}` before the body
      ++j;
      while (j < t.size()) {
        while (j < t.size() && !t[j].is("(") && !t[j].is("{")) ++j;
        if (j >= t.size()) break;
        j = t[j].is("(") ? matching_close(t, j, "(", ")") : matching_close(t, j, "{", "}");
        if (j + 1 < t.size() && t[j + 1].is(",")) {
          j += 2;
          continue;
        }
        ++j;
        break;
      }
      continue;
    }
    ++j;
  }
  if (j >= t.size() || t[j].is(";")) return j < t.size() ? j : t.size() - 1;
  return matching_close(t, j, "{", "}");
}

// Class template specializations that differ only in address spaces
// (`pointer_element<thread T*>`, `pointer_element<device T*>`, as MLX writes): the first, where
// they say the same; where they do not (`Traits<device T*>::k` 1, `Traits<threadgroup T*>::k` 2),
// a CompileError: the targets cannot tell them apart (the second was dropped, silently, before
// 2026-12-06).
void duplicate_specializations(const std::vector<Token>& t, const std::string& source,
                               std::vector<std::pair<std::size_t, std::size_t>>& out) {
  std::map<std::string, std::pair<std::size_t, std::size_t>> seen;  // key → the first one's body
  for (std::size_t i = 0; i + 2 < t.size(); ++i) {
    if (!(t[i].is_identifier("struct") || t[i].is_identifier("class")) || t[i + 1].kind != TokenKind::identifier ||
        !t[i + 2].is("<"))
      continue;
    int depth = 0;
    std::size_t close = i + 2;
    bool spaced = false;
    std::string key = t[i + 1].text + "<";
    for (; close < t.size(); ++close) {
      if (t[close].is("<")) ++depth;
      else if (t[close].is(">") && --depth == 0) break;
      else if (t[close].is(">>") && (depth -= 2) <= 0) break;
      if (is_space_word(t[close])) spaced = true;
      else if (close > i + 2) key += t[close].text + " ";
    }
    if (!spaced || close + 1 >= t.size()) continue;
    std::size_t open = close + 1;
    while (open < t.size() && !t[open].is("{") && !t[open].is(";")) ++open;
    if (open >= t.size() || !t[open].is("{")) continue;
    std::size_t end = matching_close(t, open, "{", "}");
    if (end + 1 < t.size() && t[end + 1].is(";")) ++end;
    const std::size_t start = declaration_start(t, i);
    const auto first = seen.find(key);
    if (first == seen.end()) {
      seen.emplace(key, std::make_pair(open, end));
    } else {
      if (body_as_targets_see_it(t, first->second.first, first->second.second) !=
          body_as_targets_see_it(t, open, end))
        throw error_at(source, t[i + 1],
                       "class template '" + t[i + 1].text + "' is specialised for pointers of two address spaces "
                       "with different bodies: the CPU and CUDA backends keep one address space, so only "
                       "specialisations that say the same can be merged (give them one body, or specialise on "
                       "something else)");
      out.emplace_back(start, end);
    }
    i = end;
  }
}

}  // namespace

bool qualifies_this(const std::vector<Token>& t, std::size_t i) {
  std::size_t before = i;
  while (before > 0 && is_qualifier_word(t[before - 1])) --before;
  if (before == 0 || !t[before - 1].is(")")) return false;
  std::size_t after = i + 1;
  while (after < t.size() && is_qualifier_word(t[after])) ++after;
  return after < t.size() && continues_declaration(t[after]);
}

bool declares_constructor(const std::vector<Token>& t, std::size_t close) {
  const std::size_t open = matching_open(t, close, "(", ")");
  const std::size_t name = function_name(t, open);
  if (name == 0 || t[name].kind != TokenKind::identifier) return false;
  if (t[name - 1].is("~")) return true;
  if (t[name - 1].is("::") && name >= 2) {  // `A::A(...)`, `B<T>::B(...)`
    std::size_t owner = name - 2;
    if (t[owner].is(">") && owner > 0) owner = matching_open(t, owner, "<", ">") - 1;
    return t[owner].text == t[name].text;
  }
  return enclosing_class(t, name) == t[name].text;
}

std::vector<std::pair<std::size_t, std::size_t>> space_qualified_duplicates(const std::vector<Token>& t,
                                                                            const std::string& source) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  duplicate_specializations(t, source, out);
  std::map<std::string, std::size_t> firsts;  // declaration key → where the first one's qualifiers end
  // The nearest unmatched '{' before each token (0 at file scope), found once: walking back
  // from every ')' made a long function body quadratic (16,000 calls: a minute).
  std::vector<std::size_t> scope_of(t.size(), 0);
  std::vector<std::size_t> open_braces;
  for (std::size_t j = 0; j < t.size(); ++j) {
    scope_of[j] = open_braces.empty() ? 0 : open_braces.back();
    if (t[j].is("{")) open_braces.push_back(j);
    else if (t[j].is("}") && !open_braces.empty()) open_braces.pop_back();
  }
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    if (!t[i].is(")")) continue;
    std::size_t after = i + 1;
    bool qualified = false;
    std::string cv;
    for (; after < t.size() && is_qualifier_word(t[after]); ++after) {
      if (is_space_word(t[after])) qualified = true;
      else cv += t[after].text + " ";
    }
    if (after >= t.size() || !continues_declaration(t[after]) || t[after].is("[")) continue;
    if (t[after].is("=") && !(after + 1 < t.size() && (t[after + 1].is_identifier("default") ||
                                                        t[after + 1].is_identifier("delete") || t[after + 1].is("0"))))
      continue;
    const std::size_t open = matching_open(t, i, "(", ")");
    const std::size_t start = declaration_start(t, open);
    // The enclosing scope: the nearest unmatched '{' before the declaration.
    std::string key = std::to_string(scope_of[start]) + ":";
    for (std::size_t j = start; j < open; ++j)  // the return type's address space does not overload
      if (!is_space_word(t[j])) key += t[j].text + " ";
    // Reference parameters of another address space (`S(const constant matrix<T, C, R>& m)`
    // beside `S(const thread matrix<T, C, R>& m)`, SPIRV-Cross's spvStorageMatrix) bind any
    // object here, so they overload alike; pointer ones are told apart (address_space_overloads).
    bool pointers = false, spaced_params = false;
    for (std::size_t j = open; j <= i; ++j) {
      pointers = pointers || t[j].is("*");
      spaced_params = spaced_params || is_space_word(t[j]);
    }
    const bool member = spaced_params && !pointers && !enclosing_class(t, open).empty();
    for (std::size_t j = open; j <= i; ++j)
      if (!member || !is_space_word(t[j])) key += t[j].text + " ";
    key += "| " + cv;
    const bool by_this = qualified;
    qualified = qualified || member;
    const auto first = firsts.find(key);
    if (first == firsts.end()) {
      firsts.emplace(key, after);
    } else if (qualified) {
      const std::size_t end = declaration_end(t, after);
      const std::string body = body_as_targets_see_it(t, after, end);
      const std::string first_body = body_as_targets_see_it(t, first->second, declaration_end(t, first->second));
      // Two definitions (a body, or a constructor's initializers and body: `: s(p) {}` beside
      // `: s(10 * p) {}` kept the first constructor silently before 2026-12-06).
      const bool defined = first_body.find('{') != std::string::npos && body.find('{') != std::string::npos;
      if (first_body != body && defined) {
        const std::string name = t[function_name(t, open)].text;
        throw error_at(source, t[function_name(t, open)],
                       by_this ? "'" + name +
                                     "' is overloaded by the address space of `this` with a different body: the CPU "
                                     "and CUDA backends keep every object in one address space, so only overloads "
                                     "that do the same can be merged"
                               : member_overload_message(name));
      }
      out.emplace_back(start, end);
    }
    i = after;
  }
  return out;
}

}  // namespace metalcall::msl
