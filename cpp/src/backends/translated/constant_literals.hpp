// Function-constant values as C++ literals: a translated library is specialised by
// compiling it with each [[function_constant]] defined to its exact value.
#pragma once

#include <vector>

#include "metalcall/device.hpp"
#include "msl/translate/translator.hpp"

namespace metalcall::translated {

/**
 * A C++ expression with the exact value of `given` as constant `c`'s type (a vector's: its
 * components' expressions, comma-separated); ArgumentError if a value does not fit or a vector's
 * count of values is not its width.
 */
std::string constant_literal(const msl::FunctionConstantInfo& c, const FunctionConstant& given);

/**
 * The literals of `given`, matched to `declared` by msl::match_constants (ArgumentError
 * for an unknown constant or one given twice), by constant index.
 */
msl::ConstantValues constant_literals(const std::vector<msl::FunctionConstantInfo>& declared,
                                      const std::vector<FunctionConstant>& given);

}  // namespace metalcall::translated
