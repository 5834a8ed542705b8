// Matching function-constant values to the constants a source declares, and which
// [[function_constant(name)]] parameters exist for them (every backend, Metal included).
#pragma once

#include <cstddef>
#include <vector>

#include "metalcall/device.hpp"
#include "metalcall/reflection.hpp"
#include "msl/translate/translator.hpp"

namespace metalcall::msl {

/**
 * Matches each value of `given` to a constant of `declared` by name or index and
 * returns, per given value, the index of its match in `declared`. ArgumentError for
 * an unknown constant (listing the declared ones) or one given twice. Every backend
 * matches function constants through this.
 */
std::vector<std::size_t> match_constants(const std::vector<FunctionConstantInfo>& declared,
                                         const std::vector<FunctionConstant>& given);

/**
 * Sets ParamInfo::enabled of each parameter of `kernel` declared with
 * [[function_constant(name)]] for the values `given` (already checked by match_constants):
 * enabled when `name` is given a true (non-zero) value; disabled when it is false or not
 * given (an undefined constant reads as false, as in a translated kernel). A name that is not
 * a declared function constant (a program-scope constant computed from them) leaves the
 * parameter enabled: its value is not known here.
 */
void enable_params(KernelInfo& kernel, const std::vector<FunctionConstantInfo>& declared,
                   const std::vector<FunctionConstant>& given);

}  // namespace metalcall::msl
