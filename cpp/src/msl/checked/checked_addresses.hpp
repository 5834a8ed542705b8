// Checked mode: raw addresses in function bodies (`&t[i]`, `&t[i][j]`, `&s.a[i]`, `&x`)
// rewritten as checked pointers (metal_checked_addresses.h has what they call).
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/** The rewrites of unary `&` applied to a name, member accesses and subscripts: `&a…[i][j]`
 *  → `metal::mtl_rt::element_address(a…, i, j)` (a checked array gives a checked pointer with
 *  its bounds), `&x` and `&s.m` → `metal::mtl_rt::variable_address(x)` (one element, or the
 *  argument it lies in). `replace`: tokens written as this text instead; `before`: text
 *  written before a token. Left alone: the `&` in `handled` (a kernel's `&param`), a function's
 *  address among the template arguments of one of `function_templates`, and lambda captures.
 *  Also `this` used as a pointer value (`auto p = this;`, `f(this)`, `&*this`) →
 *  `metal::mtl_rt::this_address(*this)`, a checked pointer to the object (not `this->m`, `*this`,
 *  a capture, a named cast's operand), and `&(*p).m` as `&p->m`. */
struct AddressRewrites {
  std::map<std::size_t, std::string> replace;
  std::map<std::size_t, std::string> before;
};
AddressRewrites find_address_rewrites(const std::vector<Token>& t, const std::set<std::size_t>& handled,
                                      const std::set<std::string>& function_templates);

/** Checked arrays passed whole to a function (`f(t)`, `Foo f(t);`), by the names of the
 *  source's checked arrays (`names`; threadgroup ones are found here): text before tokens,
 *  `metal::mtl_rt::array_arg(t)`, what the array decays to in MSL (a checked pointer), so that
 *  a parameter deduced by value gets a pointer, not a copy of the array. Also an array that is
 *  a branch of `?:` beside one of the integer `literals` (conditional_int_literals: `c ? t : 0`):
 *  `metal::mtl_rt::branch_pointer(t)`, a checked pointer the literal converts to as null. */
std::map<std::size_t, std::string> array_arguments(const std::vector<Token>& t, std::set<std::string> names,
                                                   const std::set<std::size_t>& literals);

/** True when the pointer type at tokens [i, star] is a cast's target: `(thread uchar*)x`,
 *  `static_cast<thread uchar*>(x)`, `reinterpret_cast<…>(x)` (checked mode makes a `thread`
 *  one a checked pointer over the same bytes, as for the other address spaces). */
bool is_pointer_cast(const std::vector<Token>& t, std::size_t i, std::size_t star);

/** A class template's partial specialization for pointers (`template <typename T> struct
 *  pointer_element<device T*> {…};`, MLX's traits): the text replacing its `;`, which adds
 *  twins for checked pointers and arrays passed whole, `template <typename T> struct
 *  pointer_element<metal::mtl_checked<T>> : pointer_element<T*> {};` (once per name: the
 *  address-space variants are one on the CPU). */
std::map<std::size_t, std::string> pointer_specialization_twins(const std::vector<Token>& t);

}  // namespace metalcall::msl
