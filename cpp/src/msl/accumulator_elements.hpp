// `simdgroup_multiply_accumulate(X[i][j], a, b, X[i][j])` with X an array, for the CUDA
// target: the prelude's multiply_accumulate_element(X, X[i][j], a, b) sees the whole array
// and lets neighbouring accumulators share one tensor-core operation (row pairs,
// metal_simdgroup_matrix_cuda.h). A call this does not match stays as written.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "msl/lexer.hpp"

namespace metalcall::msl {

/**
 * Edits (token index → text, "" to leave a token out) that write each call
 * `simdgroup_multiply_accumulate(X[e1]…[en], a, b, X[e1]…[en])` whose first and last
 * arguments are the same tokens, X an identifier and the subscripts free of calls,
 * assignments, `++` and `--` (evaluated once instead of twice), as
 * `metal::mtl_sgm::multiply_accumulate_element(X, X[e1]…[en], a, b)`.
 */
std::map<std::size_t, std::string> accumulator_element_edits(const std::vector<Token>& t);

}  // namespace metalcall::msl
