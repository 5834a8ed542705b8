// Unary minus through the prelude, for the CUDA target: `-x` written
// `(metal::mtl_rt::neg_tag{} -x)` (metal_negation.h), which negates a char, short or bool
// (and their unsigned kinds) through a 32-bit neg the optimiser cannot see into. NVVM narrows
// `short(-x)` to PTX's neg.s16, and on the H200 the code after it took -(-32768) as +32768
// where MSL wraps it to -32768 (`short(-x) < 1` false, `int(short(-x))` 32768: fuzz seeds
// 7104-7114, the class of abs.s16 in metal_math.h). Other types negate as written.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/**
 * (the `-` token, the token after its operand) of each unary minus whose operand is plainly
 * delimited: a name (or a braced temporary of a type, `S{a, b}`: fuzz seeds 9200-9205), a
 * parenthesised expression or a named cast (`static_cast<T>(x)`,
 * `as_type<T>(x)`: fuzz seed 9200, program 999) followed by calls, subscripts, members and
 * postfix ++/--. Left as written: a literal operand, a name in capitals (a macro's constant),
 * an operand starting with another operator, a name followed by `<` (a template or a
 * comparison) other than a named cast, a parenthesised operand followed by what could make it a cast, a `-` after `)`
 * (a cast or a binary minus) or after `case`/`sizeof`, and a `-` after a `>` that may close a
 * template's arguments.
 */
std::vector<std::pair<std::size_t, std::size_t>> small_negations(const std::vector<Token>& t);

/**
 * (the `-` token, the token after its right operand) of each subtraction from an integer zero
 * (`0 - x`, `short(0) - x`, `(short)0 - x`, `short3(0) - v`) that starts an operand of its own
 * (after `(`, `,`, `=`, `return`, or an operator binding less tightly than `-`), the right
 * operand delimited as small_negations delimits one. The translation writes it `0 + (neg_tag{}
 * - x)`, the same value for every type: NVVM made `short(short(0) - x)` a neg.s16 as well
 * (fuzz seed 9205, program 113).
 */
std::vector<std::pair<std::size_t, std::size_t>> zero_subtractions(const std::vector<Token>& t);

/** Tokens [first, end) the translation writes `prefix ... )`. */
struct NarrowingWrap {
  std::size_t first, end;
  const char* prefix;
};

/**
 * The conversions to an 8- or 16-bit integer that conversion_sites finds (conversion_sites.hpp):
 * explicit (`short(x)`, `(short)(x)`, `(short)x`, `static_cast<short>(x)`) and implicit (a
 * declaration's value, `=` to a name, element or component, `return`, a call's argument), the
 * value handed to `mtl_rt::narrow_arg(`, which passes an int or wider integer through an opaque
 * `mov` in int: NVVM then cannot narrow the arithmetic before it to 16 bits, where `short(x *
 * short(-1))`, `short v = x * short(-1);` and `short(x / short(-1))` became a neg.s16 (read
 * from the PTX and SASS of NVRTC 13.0, the H200's: -(-32768) then read as +32768;
 * metal_negation.h). A literal value is left as written. A compound assignment to them (`v *=
 * short(-1)`, `v.y -= x`) goes through `mtl_rt::narrow_ref(v) *= ...`, which computes the
 * promoted result through narrow_arg (a swizzle of several components, `w.yx += e`, is a proxy
 * no reference takes, and a bit-field, `s.bits /= e`, binds none: their operand goes through
 * narrow_arg instead). And `=` to a half (one
 * component of a half vector at most) through `mtl_rt::half_arg(`: CUDA's __half has no
 * operator=(long), and its others tie (fuzz seed 9401).
 */
std::vector<NarrowingWrap> narrowing_wraps(const std::vector<Token>& t);

/** Whether s names an 8- or 16-bit integer type (char, uchar, short, ushort, int8_t ... uint16_t). */
bool is_narrow_type_name(const std::string& s);

/**
 * The token after the operand of a unary operator at i (the operand from i + 1, delimited as
 * small_negations delimits one), or t.size() where it is not plainly delimited: the operand of a
 * cast `(T)x` from its `)`.
 */
std::size_t unary_operand_end(const std::vector<Token>& t, std::size_t i);

}  // namespace metalcall::msl
