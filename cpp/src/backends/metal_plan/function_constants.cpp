// Function constants as the Metal backend sets them (see function_constants.hpp).
#include "backends/metal_plan/function_constants.hpp"

#include <algorithm>
#include <utility>

#include "core/constant_components.hpp"
#include "core/scalar_packing.hpp"
#include "metalcall/errors.hpp"

namespace metalcall::metal {

std::vector<std::uint8_t> pack_function_constant(ScalarType scalar, int width, const FunctionConstant& given,
                                                 const std::string& label) {
  const std::size_t size = scalar_size(scalar);
  if (size == 0 || width < 1 || width > 4)
    throw ArgumentError(label + " has a type metalcall cannot set; give it a scalar or vector type");
  ParamInfo as_param;
  as_param.binding = -1;  // pack_scalar then takes the name as the whole description
  as_param.scalar = scalar;
  as_param.element_size = size;
  const std::vector<const Argument*> components = constant_components(width, given, label);
  std::vector<std::uint8_t> bytes;
  for (std::size_t i = 0; i < components.size(); ++i) {
    as_param.name = label + component_label(width, i);
    const std::vector<std::uint8_t> b = pack_scalar(*components[i], as_param);
    bytes.insert(bytes.end(), b.begin(), b.end());
  }
  if (width == 3) bytes.resize(4 * size, 0);  // a 3-vector has the size of a 4-vector (float3 is 16 bytes)
  return bytes;
}

std::vector<FunctionConstantSlot> known_constants(std::vector<FunctionConstantSlot> used,
                                                 const std::vector<FunctionConstantSlot>& declared) {
  std::vector<FunctionConstantSlot> known = std::move(used);
  for (const FunctionConstantSlot& d : declared)
    if (std::none_of(known.begin(), known.end(), [&](const FunctionConstantSlot& k) { return k.name == d.name; })) {
      known.push_back(d);
      known.back().used = false;
      known.back().required = false;
    }
  std::sort(known.begin(), known.end(),
            [](const FunctionConstantSlot& a, const FunctionConstantSlot& b) { return a.index < b.index; });
  return known;
}

Specialisation specialisation(const std::string& kernel, const std::vector<FunctionConstantSlot>& known,
                              const std::vector<FunctionConstant>& given, const std::vector<std::size_t>& matches) {
  Specialisation out;
  out.specialise = std::any_of(known.begin(), known.end(), [](const FunctionConstantSlot& k) { return k.used; });
  std::vector<bool> given_slot(known.size(), false);
  for (std::size_t i = 0; i < given.size(); ++i) {
    const FunctionConstantSlot& slot = known[matches[i]];
    given_slot[matches[i]] = true;
    std::vector<std::uint8_t> bytes = pack_function_constant(
        slot.scalar, slot.width, given[i],
        "kernel '" + kernel + "' function constant '" + slot.name + "' (index " + std::to_string(slot.index) + ", " +
            slot.type_name + ")");
    if (slot.used) out.values.push_back({std::move(bytes), slot.metal_type, slot.index});
  }
  for (std::size_t i = 0; i < known.size(); ++i)
    if (known[i].required && !given_slot[i])
      throw ArgumentError("kernel '" + kernel + "' needs function constant '" + known[i].name + "' (index " +
                          std::to_string(known[i].index) + ", " + known[i].type_name + "): pass constants={\"" +
                          known[i].name + "\": value}");
  return out;
}

}  // namespace metalcall::metal
