// Function constants as the Metal backend sets them (MTLFunctionConstantValues): matched to the
// function's constants, packed to their MTLDataType, required ones enforced. Plain C++, shared by
// the Objective-C++ driver (metal_compiler.mm, with Metal's reflection) and the Metal simulator
// (with the front end's), so both apply the same rules.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "metalcall/device.hpp"
#include "metalcall/reflection.hpp"

namespace metalcall::metal {

/**
 * Bytes of a [[function_constant]] value of `scalar` x `width`, as setConstantValue:type: reads
 * them: each component through core's pack_scalar (the rules of kernel arguments), a vector's
 * from `given.components`, which must hold `width` values (core's constant_components); a 3-vector
 * padded to 4 components. Throws ArgumentError that starts with `label` (the constant, for the user).
 */
std::vector<std::uint8_t> pack_function_constant(ScalarType scalar, int width, const FunctionConstant& given,
                                                 const std::string& label);

/**
 * The MTLDataType of a function constant of `scalar` x `width` (MTLDataTypeUShort2 for ushort2),
 * as setConstantValue:type: takes it; 0 (MTLDataTypeNone) for one Metal's constants cannot have
 * here (long, ulong and bfloat vectors: metal_compiler.mm reads them from no SDK it checks).
 * metal_compiler.mm asserts the values against Metal's headers; the simulator's plans use it.
 */
constexpr std::uint64_t metal_data_type(ScalarType scalar, int width) {
  if (width < 1 || width > 4) return 0;
  const std::uint64_t w = static_cast<std::uint64_t>(width - 1);
  switch (scalar) {
    case ScalarType::f32: return 3 + w;
    case ScalarType::f16: return 16 + w;
    case ScalarType::i32: return 29 + w;
    case ScalarType::u32: return 33 + w;
    case ScalarType::i16: return 37 + w;
    case ScalarType::u16: return 41 + w;
    case ScalarType::i8: return 45 + w;
    case ScalarType::u8: return 49 + w;
    case ScalarType::boolean: return 53 + w;
    case ScalarType::i64: return width == 1 ? 81 : 0;
    case ScalarType::u64: return width == 1 ? 85 : 0;
    case ScalarType::bf16: return width == 1 ? 121 : 0;
    default: return 0;
  }
}

/**
 * A function constant a call may set on one function: one Metal reports for it
 * (functionConstantsDictionary: `used`, with its MTLDataType and `required`), or one the source
 * declares that this function does not use (accepted and checked as on the CPU, not passed on).
 */
struct FunctionConstantSlot {
  std::string name;
  std::size_t index = 0;
  bool used = false;
  std::uint64_t metal_type = 0;  // MTLDataType, when used
  ScalarType scalar = ScalarType::unknown;
  int width = 1;
  std::string type_name;
  bool required = false;
};
/** One [MTLFunctionConstantValues setConstantValue:type:atIndex:]. */
struct FunctionConstantValue {
  std::vector<std::uint8_t> bytes;
  std::uint64_t metal_type = 0;
  std::size_t index = 0;
};
/** How to get a kernel's function: newFunctionWithName: alone, or specialised with `values`. */
struct Specialisation {
  bool specialise = false;  // newFunctionWithName:constantValues:error: (the function uses constants)
  std::vector<FunctionConstantValue> values;
};
/**
 * The constants a call may set on one function, by index: `used` are Metal's constants of the
 * function, to which the source's other declared constants (`declared`) are added, unused.
 */
std::vector<FunctionConstantSlot> known_constants(std::vector<FunctionConstantSlot> used,
                                                 const std::vector<FunctionConstantSlot>& declared);

/**
 * The specialisation of kernel `kernel` for the values `given`, `matches[i]` being the index in
 * `known` (known_constants) of given[i], as msl::match_constants finds it (the matcher of every
 * backend: unknown or repeated constants refused there). Values are packed to their types
 * (pack_function_constant), and a required constant left out is an ArgumentError. Values of
 * constants the function does not use are checked, not passed.
 */
Specialisation specialisation(const std::string& kernel, const std::vector<FunctionConstantSlot>& known,
                              const std::vector<FunctionConstant>& given, const std::vector<std::size_t>& matches);

}  // namespace metalcall::metal
