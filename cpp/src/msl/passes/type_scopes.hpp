// The source's own names for types and the tokens where each holds: a template's type
// parameters (`template <typename U>`: the declaration that follows) and typedef and using
// aliases (`typedef int idx_t;`, `using acc_t = U;`: to the end of the block that declares them,
// or of the file). conversion_sites reads a conversion to one of them as one to the type it may
// stand for: a template parameter any type, an alias the type it names.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

class TypeScopes {
 public:
  explicit TypeScopes(const std::vector<Token>& t);

  /** The scope in which the name at token i is one of these names (the innermost), or -1. */
  int scope_at(std::size_t i) const;
  /** Whether the name at token i, one of these names there, may stand for a type `accepts`
   * says yes to: a template parameter always (any type may instantiate it), an alias where the
   * type it names (its last word, or another alias or parameter seen from there) is one. */
  bool may_be(std::size_t i, bool (*accepts)(const std::string&)) const;
  /** Whether token i lies where scope `id` holds. */
  bool holds(int id, std::size_t i) const { return id >= 0 && scopes_[id].begin <= i && i < scopes_[id].end; }

 private:
  struct Scope {
    std::size_t begin, end;  // the tokens where the name holds: [begin, end)
    std::string name;
    std::string target;  // what an alias names (its last word); "" for a template parameter
  };
  int find(const std::string& name, std::size_t i) const;
  bool may_be(int id, bool (*accepts)(const std::string&), int depth) const;

  const std::vector<Token>& t_;
  std::vector<Scope> scopes_;
  std::unordered_map<std::string, std::vector<int>> by_name_;  // each name's scopes
};

}  // namespace metalcall::msl
