// A constant converted to a template's type parameter or to half (`U(0)`, `static_cast<U>(1.0f)`,
// `half(0)`), for the CUDA target: CUDA's __half constructors are not constexpr, so MLX's
// `static constexpr U init = U(0);` with U = half was no constant expression there.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/**
 * Edits (token index → text, "" to leave a token out) that write `N(lit)` and
 * `static_cast<N>(lit)` as `metal::mtl_rt::literal_cast<N>::from(lit)` (metal_half_cuda.h:
 * constexpr for half, N(lit) otherwise), where N is `half` or the name of a template type
 * parameter declared anywhere in the source and lit one numeric literal, maybe negated (for
 * `half`, any one argument: `half(INFINITY)` in a program-scope constant).
 * `renamed` is N as the translation spells it (`half` → `mtl_half`).
 */
std::map<std::size_t, std::string> literal_cast_edits(const std::vector<Token>& t,
                                                      std::string (*renamed)(const std::string&));

/** The initialiser of a constexpr variable whose type is such an N: tokens [begin, end). */
struct ConstexprInitializer {
  std::size_t begin, end;
  std::string type;  // N as the translation spells it
};

/**
 * `constexpr N name = EXPR;` or `constant N name = EXPR;` (program-scope constant data is
 * constexpr on CUDA; static, const and address spaces may come first), N as above
 * and EXPR not braced: mistral.rs's `constexpr T n_bins = bits == 40 ? 15 : (1 << bits) - 1;`
 * with T = half converts an int to __half, no constant expression on CUDA. The translation
 * writes EXPR as `metal::mtl_rt::literal_cast<N>::from((EXPR))`, the same conversion, constexpr.
 * A declaration of several variables (a comma at the top level) is left as written.
 */
std::vector<ConstexprInitializer> constexpr_initializers(const std::vector<Token>& t,
                                                         std::string (*renamed)(const std::string&));

}  // namespace metalcall::msl
