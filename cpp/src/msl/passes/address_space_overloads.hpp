// Overloads that differ only in address space: which parameters and arguments the
// translator tags so that they stay distinct on targets without address spaces.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

struct SpaceOverloads {
  /** First token of a pointer parameter → (its '*', the text that replaces both and all between). */
  std::map<std::size_t, std::pair<std::size_t, std::string>> params;
  /** A variable passed to such an overload → its text tagged with its declaration's address space. */
  std::map<std::size_t, std::string> args;
  /** An address taken of an object whose declaration names its address space (`&a.inner[i]`,
      `a` a `device S&`): its first and last tokens and the text opening the tag before it. */
  std::vector<std::pair<std::pair<std::size_t, std::size_t>, std::string>> wraps;
  /** Overloads by the address space of references only whose bodies are the same, after the
      first: token ranges [first, last] to leave out. */
  std::vector<std::pair<std::size_t, std::size_t>> skip;
  /** Overloads by the address space of references whose bodies differ: the '(' of each
      declaration and call → the tag of spaces written after it (`metal::mtl_ref_spaces<1>, `). */
  std::map<std::size_t, std::string> tags;
};

/** Tokens from..to as the targets see them, to tell whether two overloads say the same: without
    address-space words, and with the translator's own names (loop_strips' `__metalcall_strip_56`,
    numbered by position) unnumbered, so two copies of one body compare equal. */
std::string body_as_targets_see_it(const std::vector<Token>& t, std::size_t from, std::size_t to);

/** The refusal of a member function or constructor `name` overloaded by a reference parameter's
    address space with different bodies (address_space_overloads, this_address_space). */
std::string member_overload_message(const std::string& name);

/** Finds functions overloaded only by address space, their pointer parameters and the arguments
    of calls to them; a CompileError where a call's overload cannot be told (`source`: for the message). */
SpaceOverloads address_space_overloads(const std::vector<Token>& t, const std::string& source);

}  // namespace metalcall::msl
