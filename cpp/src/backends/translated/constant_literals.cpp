// Function-constant values as exact C++ literals (see constant_literals.hpp).
#include "backends/translated/constant_literals.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>

#include "core/constant_components.hpp"
#include "core/scalar_packing.hpp"
#include "metalcall/errors.hpp"
#include "msl/parse/function_constants.hpp"

namespace metalcall::translated {

using msl::FunctionConstantInfo;

namespace {

// One scalar's literal (a vector's component); `label` names it in errors.
std::string scalar_literal(const FunctionConstantInfo& c, const Argument& value, const std::string& label) {
  ParamInfo as_param;
  as_param.binding = -1;
  as_param.name = label;
  as_param.scalar = c.scalar;
  (void)pack_scalar(value, as_param);  // validates kind and range
  const std::string type = "mtl_" + std::string(to_string(c.scalar));
  switch (c.scalar) {
    case ScalarType::boolean: return value.int_value ? "true" : "false";
    case ScalarType::f32:
    case ScalarType::f16:
    case ScalarType::bf16: {
      const double v = value.kind == Argument::Kind::floating ? value.float_value : integer_rounded_to_odd(value);
      std::string literal;
      // The prelude's constants (constexpr on every target; NVRTC has no __builtin_huge_valf).
      if (std::isnan(v)) literal = "metal::numeric_limits<float>::quiet_NaN()";
      else if (std::isinf(v)) literal = v > 0 ? "metal::numeric_limits<float>::infinity()" : "(-metal::numeric_limits<float>::infinity())";
      else {
        char buf[64];
        // exact: hex float; for half and bfloat rounded to odd, so that the prelude's rounding on from
        // float gives what rounding v would (scalar_packing.hpp)
        const float f = c.scalar == ScalarType::f32 ? static_cast<float>(v) : float_rounded_to_odd(v);
        std::snprintf(buf, sizeof buf, "%af", static_cast<double>(f));
        literal = buf;
      }
      if (c.scalar == ScalarType::f32) return "(" + literal + ")";
      // A constant expression on every target (CUDA's __half(float) is not constexpr: metal_half.h).
      if (c.scalar == ScalarType::f16) return "METALCALL_HALF_CONSTANT(" + literal + ")";
      return type + "(" + literal + ")";
    }
    default: {
      const std::string digits = value.int_is_unsigned ? std::to_string(std::uint64_t(value.int_value)) + "ull"
                                 : value.int_value == INT64_MIN ? std::string("(-9223372036854775807ll - 1)")
                                                                 : "(" + std::to_string(value.int_value) + "ll)";
      const std::string cxx_type = c.scalar == ScalarType::i8 ? "signed char" : c.scalar == ScalarType::i16 ? "short"
                                 : c.scalar == ScalarType::i32 ? "int" : c.scalar == ScalarType::i64 ? "long" : type;
      return "((" + cxx_type + ")" + digits + ")";
    }
  }
}

}  // namespace

std::string constant_literal(const FunctionConstantInfo& c, const FunctionConstant& given) {
  const std::string label = "function constant '" + c.name + "' (index " + std::to_string(c.index) + ", " + c.type_name + ")";
  const std::vector<const Argument*> components = constant_components(c.vector_width, given, label);
  std::string literal;
  for (std::size_t i = 0; i < components.size(); ++i)
    literal += (i ? ", " : "") + scalar_literal(c, *components[i], label + component_label(c.vector_width, i));
  return literal;
}

msl::ConstantValues constant_literals(const std::vector<FunctionConstantInfo>& declared,
                                      const std::vector<FunctionConstant>& given) {
  msl::ConstantValues values;
  const std::vector<std::size_t> matches = msl::match_constants(declared, given);
  for (std::size_t i = 0; i < given.size(); ++i) {
    const FunctionConstantInfo& c = declared[matches[i]];
    values[c.index] = constant_literal(c, given[i]);
  }
  return values;
}

}  // namespace metalcall::translated
