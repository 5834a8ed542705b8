// Loop nests of SIMD-group matrix products and loads, for the CUDA target: a nest of one
// to three `for` loops whose body is one `simdgroup_multiply_accumulate(X[..], a, b, X[..])`,
// such as a GEMM's
//
//     for (uint i = 0; i < FM; ++i)
//         for (uint j = 0; j < FN; ++j) simdgroup_multiply_accumulate(acc[i][j], a[i], b[j], acc[i][j]);
//
// goes whole to the prelude's product_nest (metal_simdgroup_nest_cuda.h), which sees what
// one call cannot: that the accumulators of rows i and i + 1 take the same b, and that
// the products of a reduction loop k and k + 1 go into the same accumulator, so one
// tensor-core operation can take four products with nothing wasted and nothing pending.
// Likewise a nest whose body is one `simdgroup_load(M[..], ...)` goes to load_nest, which
// reads four 8x8 blocks of threadgroup memory with one ldmatrix.x4 where a call would
// read one. A nest this does not match stays as written.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/**
 * Edits (token index → text, "" to leave a token out) that hand each matching nest to
 * `metal::mtl_sgm::product_nest` or `load_nest`. A nest matches when:
 * - its loops are `for (T v = begin; v < end; ++v)` (or `v++`, `v += 1`), each the whole
 *   body of the one outside it (braces and `#pragma` lines allowed), with bounds that
 *   name no loop variable of the nest, call nothing but sizeof and vector constructors
 *   (`ulong2(..)`) and change nothing;
 * - products: the innermost body is `simdgroup_multiply_accumulate(X[..], a, b, X[..]);`
 *   with the same tokens first and last, X[..] subscripts that are each one loop variable
 *   or name none, a and b expressions as plain as the bounds that do not name X; each loop
 *   variable has one role: a row (a subscript of X, named by a, not by b), a column (a
 *   subscript of X, named by b, not by a) or a reduction (named by a and b, not by X);
 *   exactly one row, at most one column and one reduction;
 * - loads: the innermost body is `simdgroup_load(M[..], source, ...);` with M[..] an
 *   element and the other arguments as plain as the bounds, not naming M.
 * `touched(i)` tells whether another rewrite already changes token i: such nests stay.
 */
std::map<std::size_t, std::string> product_nest_edits(const std::vector<Token>& t,
                                                     const std::function<bool(std::size_t)>& touched);

}  // namespace metalcall::msl
