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

/**
 * (the `(`, its `)`) of each explicit conversion to an 8- or 16-bit integer (`short(x)`,
 * `(short)(x)`, `static_cast<short>(x)`; char, uchar, short, ushort and the intN_t names) whose
 * argument is not a literal. The translation hands the argument to `mtl_rt::narrow_arg`, which
 * passes an integer through an opaque `mov` in int: NVVM then cannot narrow the arithmetic
 * before it to 16 bits, where `short(x * short(-1))` and `short(x / short(-1))` became a neg.s16
 * (metal_negation.h).
 */
std::vector<std::pair<std::size_t, std::size_t>> narrowing_casts(const std::vector<Token>& t);

/** Tokens [first, end) the translation writes `prefix ... )`. */
struct NarrowingWrap {
  std::size_t first, end;
  const char* prefix;
};

/**
 * The arguments of narrowing_casts (`mtl_rt::narrow_arg(`), and the implicit conversions to an
 * 8- or 16-bit integer the tokens show, where NVVM made the same neg.s16 (`short v = x *
 * short(-1);`, read from the PTX and SASS of NVRTC 13.0, the H200's: -(-32768) then read as
 * +32768): the value of a declaration of a char or short (not `constant`, `constexpr` or
 * `static` data, nor a literal or a braced list), of `=` to a name declared only with such types
 * or to an element of an array of or a pointer to them, or to a component or swizzle of a char
 * or short vector (`v.x`, `v[k]`, `out[i].y`, `w.yx`), of `return` in a function returning one
 * (but one holding a lambda) or in a lambda declared `-> short`, and of an argument where every
 * function, lambda (`auto f = [&](short p)`) or struct constructor (`P(short x) : a(x) {}`, called
 * `P(...)`) of that name takes one, through `narrow_arg(`;
 * a compound assignment to them (`v *= short(-1)`, `v.y -= x`) through `mtl_rt::narrow_ref(v)
 * *= ...`, which computes the promoted result through narrow_arg (a swizzle of several
 * components, `w.yx += e`, is a proxy no reference takes: its operand goes through narrow_arg
 * instead). A struct's member converts as written.
 */
std::vector<NarrowingWrap> narrowing_wraps(const std::vector<Token>& t);

/** Whether s names an 8- or 16-bit integer type (char, uchar, short, ushort, int8_t ... uint16_t). */
bool is_narrow_type_name(const std::string& s);

}  // namespace metalcall::msl
