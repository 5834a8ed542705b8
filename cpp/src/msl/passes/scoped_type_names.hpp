// The names a source declares with a kind of type (short, half, a template parameter that may
// be one), read function by function: the conversion pass asks which type a name it assigns to
// has there (conversion_sites.cpp).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

// Whether the token at an index names a type of the kind sought, and that type as a site
// records it (its words: "unsigned int"; a name of the source's own with its scope: "U@3").
struct TypeTest {
  std::function<bool(std::size_t)> is;
  std::function<std::string(std::size_t)> name;
};

// Names declared with a type of a kind: `short v`, `const ushort w = ...`, parameters (`short
// p`); and those declared as pointers to or arrays of them (`device short* out`, `threadgroup
// char tg[64]`, `short a[4]`), whose elements are; each with its type's words ("unsigned int"),
// or "" where its declarations name two. `other`: the names declared with any other type; a name
// in both is neither.
struct TypedNames {
  std::map<std::string, std::string> values, elements;
  std::set<std::string> other;
};

// The names of one type kind, function by function: a name a function declares (its parameters
// and locals) is read from that function's declarations, any other from the program-scope
// ones (struct members, constants). A file's kernels often share parameter names of different
// types (`device short* out` here, `device float* out` there).
class ScopedNames {
 public:
  ScopedNames(const std::vector<Token>& t, const TypeTest& is_type);
  // The type of the name at token i (its declarations seen from there) where it is a value or
  // the elements of the type kind; nullptr where it is not.
  const std::string* value(std::size_t i, const std::string& name) const { return find(pick(i, name).values, name); }
  const std::string* elements(std::size_t i, const std::string& name) const {
    return find(pick(i, name).elements, name);
  }

 private:
  static const std::string* find(const std::map<std::string, std::string>& names, const std::string& name) {
    auto it = names.find(name);
    return it == names.end() ? nullptr : &it->second;
  }
  const TypedNames& pick(std::size_t i, const std::string& name) const {
    if (owner_[i]) {
      const TypedNames& local = scopes_[owner_[i] - 1];
      if (local.values.count(name) || local.elements.count(name) || local.other.count(name)) return local;
    }
    return global_;
  }
  std::vector<std::size_t> owner_;  // token -> 1 + its function's index in scopes_, or 0
  std::vector<TypedNames> scopes_;
  TypedNames global_;
};

}  // namespace metalcall::msl
