// The conversions to a kind of type that the tokens show, explicit and implicit: what the CUDA
// translation hands to the prelude for char and short (NVVM's neg.s16, small_negations.hpp) and
// half (`h = long`), and the CPU translation for int, uint, long and ulong (a NaN converted to
// 0 and out-of-range values saturated, as MSL's GPUs convert: metal_conversion.h). A token walk:
// it sees the conversions whose destination's type is spelled where it can read it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/** Whether a type's name (one token: `short`, `uint`, `int32_t`) is of the kind sought. */
using TypeKind = bool (*)(const std::string&);

struct ConversionSite {
  enum class Form {
    cast,         // `T(x)`, `(T)(x)`, `(T)x`, `static_cast<T>(x)`
    declaration,  // `T v = x;` (not `constant`, `constexpr` or `static` data)
    assignment,   // `v = x;`, `out[i] = x;`, `*p = x;`, `v.y = x;`, `s.m = x;`
    compound,     // `v op= x;` (computed in the promoted type, then converted)
    returned,     // `return x;` in a function (or a lambda `-> T`) returning one
    argument,     // an argument where every function (lambda, constructor) of that name takes one
  };
  ConversionSite(Form form, std::size_t first, std::size_t end) : form(form), first(first), end(end) {}
  Form form;
  /** The converted value's tokens: [first, end). */
  std::size_t first, end;
  /** assignment and compound: the assigned object's tokens [target_first, target_end); the
   * operator is at target_end. */
  std::size_t target_first = 0, target_end = 0;
  /** The destination's type as the source writes it ("int", "unsigned int", "uint", "short"),
   * or empty where the tokens do not say one type. */
  std::string type;
  /** The value is a literal (`5`, `-1`, `'a'`). */
  bool literal = false;
  /** assignment and compound: to a swizzle of several components (a proxy no reference takes). */
  bool several_components = false;
  /** The value (compound: the assigned object) names a bit-field member (`s.flag`), to which
   * no reference binds. */
  bool bit_field = false;
};

/**
 * The conversions to a type of `kind` the tokens show: casts (not a declarator such as
 * `uchar (&a)[4]`, nor an empty argument); declarations of such a type with `=`; `=` and `op=` to
 * a name declared only with such types (function by function: a function's own declarations,
 * then the program scope's, so struct members count), to an element of an array of or a pointer
 * to them (`*p` too), or to a component or swizzle of a vector of them (`v.x`, `v[k]`, `out[i].y`, `w.yx`);
 * `return` in a function returning one (none holding a lambda; not `constexpr`) or in a lambda
 * declared `-> T`; arguments where every function, lambda (`auto f = [&](short p)`) or struct
 * constructor of that name takes one at that place. A struct member's type is read from its
 * declaration, under its name alone: a member named as a variable of another type is neither.
 * Casts of several words (`(unsigned int)x`, `static_cast<long long>(x)`) by their last word;
 * each declarator of a declaration of several names (`int a = x, b = y;`). With `own_types`, a
 * type named by a template parameter or by a typedef or using alias of the source's own counts
 * where that name holds (type_scopes.hpp) and may stand for one of the kind: the site's type is
 * that name (`U`, `idx_t`), or empty where the site lies outside its scope.
 * Left out: braced lists (a macro's body is seen as the preprocessor expanded it).
 */
std::vector<ConversionSite> conversion_sites(const std::vector<Token>& t, TypeKind kind, bool own_types = false);

}  // namespace metalcall::msl
