// The address space of the object an argument expression designates, read from its simple
// forms, for calls of functions overloaded by the address space of a reference parameter
// (`float rd(device const float&)` beside `float rd(thread const float&)`): Metal's overload
// resolution sees that space, and the targets, which have none, must be told it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "msl/analysis/implementation_rules.hpp"  // ClassBody
#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

struct ArgumentSpace {
  int space = -1;        // 0 thread, 1 device, 2 threadgroup, 3 constant; -1: not known
  bool pointer = false;  // a pointer or array into `space` rather than an object in it
  std::string why;       // when not known: what the translator could not read, for the error
};

class ArgumentSpaces {
 public:
  ArgumentSpaces(const std::vector<Token>& t, const std::vector<ClassBody>& classes);

  /**
   * The space of the expression at tokens [b, e): a temporary (a literal, arithmetic, a cast to
   * a value type) is thread; a variable has its declaration's space (thread for a local or a
   * by-value parameter); `p[i]`, `*p`, `p->m` the pointee's space; a member or an element the
   * object's; an assignment its left side's; a conditional its arms' when they agree. A call's
   * result, `this` and forms not listed here are unknown (space -1 and a reason).
   */
  ArgumentSpace of(std::size_t b, std::size_t e) const;

 private:
  ArgumentSpace postfix(std::size_t b, std::size_t e) const;
  ArgumentSpace members(ArgumentSpace cur, std::size_t k, std::size_t e) const;
  ArgumentSpace variable(std::size_t at) const;
  bool is_type_name(const std::string& name) const;
  std::size_t angle_close(std::size_t open, std::size_t e) const;

  const std::vector<Token>& t_;
  const std::vector<ClassBody>& classes_;
  std::vector<std::string> type_names_;  // classes, template parameters, aliases of the source
  bool subscript_operators_ = false;     // some class defines operator[]: `s[i]` may be anywhere
};

}  // namespace metalcall::msl
