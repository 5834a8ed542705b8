// Packs a Python/C++ scalar into the bytes of a kernel parameter's declared type,
// with range checks: nothing is silently wrapped, clamped or truncated.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "metalcall/argument.hpp"
#include "metalcall/reflection.hpp"

namespace metalcall {

/**
 * Bytes of `value` as `param`'s type; throws ArgumentError naming the parameter
 * (or, when param.binding < 0, using param.name as the whole description).
 */
std::vector<std::uint8_t> pack_scalar(const Argument& value, const ParamInfo& param);

/** IEEE binary16 bits of `v`, rounded to nearest even. */
std::uint16_t float_to_half_bits(float v);
/** bfloat16 bits of `v`, rounded to nearest even. */
std::uint16_t float_to_bfloat_bits(float v);
/** `v` as a float rounded to odd, which rounds on to half or bfloat as `v` itself would. */
float float_rounded_to_odd(double v);
/** An integer Argument as a double rounded to odd, which rounds on to float, half or bfloat as
 *  the integer itself would (exact up to 2^53). */
double integer_rounded_to_odd(const Argument& a);

}  // namespace metalcall
