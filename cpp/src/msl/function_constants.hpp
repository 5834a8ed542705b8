// Matching function-constant values to the constants a source declares (every
// backend, Metal included).
#pragma once

#include <cstddef>
#include <vector>

#include "metalcall/device.hpp"
#include "msl/translator.hpp"

namespace metalcall::msl {

/**
 * Matches each value of `given` to a constant of `declared` by name or index and
 * returns, per given value, the index of its match in `declared`. ArgumentError for
 * an unknown constant (listing the declared ones) or one given twice. Every backend
 * matches function constants through this.
 */
std::vector<std::size_t> match_constants(const std::vector<FunctionConstantInfo>& declared,
                                         const std::vector<FunctionConstant>& given);

}  // namespace metalcall::msl
