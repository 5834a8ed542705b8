// A function constant's values, one per component: how every backend reads a vector constant
// (`constant ushort2 s [[function_constant(2)]]`) from FunctionConstant::components.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "metalcall/device.hpp"

namespace metalcall {

/**
 * The values `given` holds for a constant of `width` components, one per component: its
 * `value` for a scalar constant, its `components` for a vector one. ArgumentError starting with
 * `label` (the constant, for the user) when their number is not the constant's: a single value
 * for a vector, a sequence for a scalar, or a sequence of another length. Nothing is padded or
 * dropped; the translated backends and the Metal backend's plan check vector constants through this.
 */
std::vector<const Argument*> constant_components(int width, const FunctionConstant& given, const std::string& label);

/** ", component N (x)": what a component's own error adds to its constant's label; "" for a scalar. */
std::string component_label(int width, std::size_t component);

}  // namespace metalcall
