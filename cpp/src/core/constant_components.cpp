// A function constant's values, one per component (see constant_components.hpp).
#include "core/constant_components.hpp"

#include "metalcall/errors.hpp"

namespace metalcall {

std::vector<const Argument*> constant_components(int width, const FunctionConstant& given, const std::string& label) {
  const std::size_t n = given.components.size();
  if (width <= 1) {
    if (n != 0)
      throw ArgumentError(label + " is a scalar: give one value, not a sequence of " + std::to_string(n));
    return {&given.value};
  }
  const std::string expected = label + " is a vector of " + std::to_string(width) + ": give " + std::to_string(width) +
                               " values (a tuple, list or NumPy array)";
  if (n == 0) throw ArgumentError(expected + ", not a single value");
  if (n != static_cast<std::size_t>(width)) throw ArgumentError(expected + ", not " + std::to_string(n));
  std::vector<const Argument*> out;
  for (const Argument& a : given.components) out.push_back(&a);
  return out;
}

std::string component_label(int width, std::size_t component) {
  if (width <= 1) return "";
  return ", component " + std::to_string(component) + " (" + "xyzw"[component] + ")";
}

}  // namespace metalcall
