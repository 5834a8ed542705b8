// `simdgroup_multiply_accumulate(X[i][j], a, b, X[i][j])` with X an array, for the CUDA
// target: the prelude's multiply_accumulate_element(X, X[i][j], a, b) sees the whole array
// and lets neighbouring accumulators share one tensor-core operation (row pairs,
// metal_simdgroup_matrix_cuda.h). A call this does not match stays as written.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/** The end (one past) of the argument starting at i: the `,` or `)` at depth 0, or t.size(). */
std::size_t argument_end(const std::vector<Token>& t, std::size_t i);

/** `X[e1]…[en]` in [b, e): an identifier, then subscripts only, whose tokens name no
 *  function and change nothing. */
bool is_element(const std::vector<Token>& t, std::size_t b, std::size_t e);

/** Whether [b1, e1) and [b2, e2) are the same tokens. */
bool same_tokens(const std::vector<Token>& t, std::size_t b1, std::size_t e1, std::size_t b2, std::size_t e2);

/**
 * Edits (token index → text, "" to leave a token out) that write each call
 * `simdgroup_multiply_accumulate(X[e1]…[en], a, b, X[e1]…[en])` whose first and last
 * arguments are the same tokens, X an identifier and the subscripts free of calls,
 * assignments, `++` and `--` (evaluated once instead of twice), as
 * `metal::mtl_sgm::multiply_accumulate_element(X, X[e1]…[en], a, b)`.
 */
std::map<std::size_t, std::string> accumulator_element_edits(const std::vector<Token>& t);

}  // namespace metalcall::msl
