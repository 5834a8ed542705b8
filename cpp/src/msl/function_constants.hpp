// Function constant values as source text: a translated kernel is specialised by
// compiling it with each [[function_constant]] defined to its exact value
// (CPU and CUDA backends alike).
#pragma once

#include <string>
#include <vector>

#include "metalcall/device.hpp"
#include "msl/translator.hpp"

namespace metalcall::msl {

/** A C++ expression with the exact value of `value` as constant `c`'s type; ArgumentError if it does not fit. */
std::string constant_literal(const FunctionConstantInfo& c, const Argument& value);

/**
 * Matches each value of `given` to a constant of `declared` by name or index and
 * returns, per given value, the index of its match in `declared`. ArgumentError for
 * an unknown constant (listing the declared ones) or one given twice. Every backend
 * matches function constants through this.
 */
std::vector<std::size_t> match_constants(const std::vector<FunctionConstantInfo>& declared,
                                         const std::vector<FunctionConstant>& given);

/**
 * The literals of `given`, matched to `declared` by name or index; ArgumentError for
 * an unknown constant (listing the declared ones) or one given twice.
 */
ConstantValues resolve_constants(const std::vector<FunctionConstantInfo>& declared,
                                 const std::vector<FunctionConstant>& given);

}  // namespace metalcall::msl
