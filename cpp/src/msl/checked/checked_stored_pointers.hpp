// Checked mode's pointers that would be stored and read back raw: a pointer to a pointer, a
// pointer declarator after a checked pointer's in one statement (refused), and a template
// parameter's pointer `T*` (made a checked pointer, as `thread T*` is).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/** Writes `thread` before each pointer to a template's type parameter that names no address
 *  space (`T* p`, `const T* q`, `T const* r`, `(T*)x`, `W<T*>`): the checked translation then
 *  makes it a checked pointer wherever it makes a `thread T*` one. In MSL such a T carries its
 *  space (`device float`, `thread S`); the CPU has one address space, so T is the element type.
 *  Before 2026-12-03 `T*` stayed a plain pointer, which a checked pointer converts to, and
 *  `w.p[k]` of `template <class T> struct W { T* p; }` wrote any address. */
void spell_template_pointer_spaces(std::vector<Token>& t);

/** The first pointer type checked mode cannot bound, by the token to name and why (a
 *  CompileError), or `at` = npos: a pointer to a pointer (`device float* thread* pp`,
 *  `thread float* thread* q`, `device T**`, as a variable, a member, a parameter or an array's
 *  element: what it points to is a checked pointer, whose copy through a raw pointer has no
 *  bounds), and a declaration that goes on after a pointer declarator (`device float *p = out,
 *  *q = &p;`: the checked pointer's type is written once, so `*q` was a raw pointer to one). */
struct RefusedPointer {
  std::size_t at = std::string::npos;
  std::string message;
};
RefusedPointer refused_stored_pointer(const std::vector<Token>& t);

}  // namespace metalcall::msl
