// The Metal backend's plain C++ logic: everything that needs no GPU, so it is tested
// off a Mac (tools/metal_check/logic_test.cpp).
#include "backends/metal/metal_backend.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "metalcall/errors.hpp"

namespace metalcall::metal {
namespace {

const char* kind_name(BindingInfo::Kind kind) {
  switch (kind) {
    case BindingInfo::Kind::buffer: return "buffer";
    case BindingInfo::Kind::threadgroup_memory: return "threadgroup memory";
    case BindingInfo::Kind::texture: return "texture";
    case BindingInfo::Kind::sampler: return "sampler";
    case BindingInfo::Kind::other: break;
  }
  return "resource";
}

bool binds_buffer(ParamKind kind) {
  return kind == ParamKind::buffer || kind == ParamKind::reference || kind == ParamKind::value;
}

// Bindings metalcall has no way to feed make the whole kernel unusable.
void reject_unsupported(const std::string& kernel, const std::vector<BindingInfo>& bindings) {
  for (const BindingInfo& binding : bindings) {
    if (binding.kind == BindingInfo::Kind::buffer ||
        binding.kind == BindingInfo::Kind::threadgroup_memory)
      continue;
    throw CompileError("[metal::Library] Kernel '" + kernel + "' takes a " + kind_name(binding.kind) +
                       " ('" + binding.name + "', index " + std::to_string(binding.index) +
                       "); metalcall binds only buffers, constants and threadgroup memory: "
                       "pass the data through a device buffer instead");
  }
}

std::size_t scalar_bytes(ScalarType scalar) {
  switch (scalar) {
    case ScalarType::boolean:
    case ScalarType::i8:
    case ScalarType::u8: return 1;
    case ScalarType::i16:
    case ScalarType::u16:
    case ScalarType::f16:
    case ScalarType::bf16: return 2;
    case ScalarType::i32:
    case ScalarType::u32:
    case ScalarType::f32: return 4;
    case ScalarType::i64:
    case ScalarType::u64: return 8;
    case ScalarType::f64:  // MSL has no double: no kernel value is one
    case ScalarType::unknown: break;
  }
  return 0;
}

bool fits_integer(const Argument& value, std::int64_t min, std::uint64_t max) {
  if (value.int_is_unsigned) return static_cast<std::uint64_t>(value.int_value) <= max;
  if (value.int_value < 0) return value.int_value >= min;
  return static_cast<std::uint64_t>(value.int_value) <= max;
}

template <class T>
std::vector<std::uint8_t> bytes_of(T value) {
  std::vector<std::uint8_t> bytes(sizeof(T));
  std::memcpy(bytes.data(), &value, sizeof(T));
  return bytes;
}

std::string describe(const Argument& value) {
  switch (value.kind) {
    case Argument::Kind::integer:
      return value.int_is_unsigned ? std::to_string(static_cast<std::uint64_t>(value.int_value))
                                   : std::to_string(value.int_value);
    case Argument::Kind::floating: return std::to_string(value.float_value);
    case Argument::Kind::boolean: return value.int_value ? "True" : "False";
    case Argument::Kind::bytes: return std::to_string(value.data.size()) + " bytes";
    case Argument::Kind::buffer: return "a buffer";
    case Argument::Kind::host: return "an array";
  }
  return "a value";
}

// Integer types: range-checked so a constant never wraps silently.
std::vector<std::uint8_t> pack_integer(ScalarType scalar, const Argument& value,
                                       const std::string& label) {
  auto out_of_range = [&](const char* range) {
    return ArgumentError("[metal::Library] Function constant " + label + " is " +
                         msl_type_name(scalar) + " (" + range + "); " + describe(value) +
                         " does not fit");
  };
  switch (scalar) {
    case ScalarType::i8:
      if (!fits_integer(value, INT8_MIN, INT8_MAX)) throw out_of_range("-128..127");
      return bytes_of(static_cast<std::int8_t>(value.int_value));
    case ScalarType::u8:
      if (!fits_integer(value, 0, UINT8_MAX)) throw out_of_range("0..255");
      return bytes_of(static_cast<std::uint8_t>(value.int_value));
    case ScalarType::i16:
      if (!fits_integer(value, INT16_MIN, INT16_MAX)) throw out_of_range("-32768..32767");
      return bytes_of(static_cast<std::int16_t>(value.int_value));
    case ScalarType::u16:
      if (!fits_integer(value, 0, UINT16_MAX)) throw out_of_range("0..65535");
      return bytes_of(static_cast<std::uint16_t>(value.int_value));
    case ScalarType::i32:
      if (!fits_integer(value, INT32_MIN, INT32_MAX)) throw out_of_range("32-bit signed");
      return bytes_of(static_cast<std::int32_t>(value.int_value));
    case ScalarType::u32:
      if (!fits_integer(value, 0, UINT32_MAX)) throw out_of_range("32-bit unsigned");
      return bytes_of(static_cast<std::uint32_t>(value.int_value));
    case ScalarType::i64:
      if (!fits_integer(value, INT64_MIN, INT64_MAX)) throw out_of_range("64-bit signed");
      return bytes_of(static_cast<std::int64_t>(value.int_value));
    case ScalarType::u64:
      if (!fits_integer(value, 0, UINT64_MAX)) throw out_of_range("64-bit unsigned");
      return bytes_of(static_cast<std::uint64_t>(value.int_value));
    default: break;
  }
  throw ArgumentError("[metal::Library] Function constant " + label + " has a type metalcall cannot set");
}

std::vector<std::uint8_t> pack_float(ScalarType scalar, const Argument& value,
                                     const std::string& label) {
  double number = value.float_value;
  if (value.kind == Argument::Kind::integer)
    number = value.int_is_unsigned ? static_cast<double>(static_cast<std::uint64_t>(value.int_value))
                                   : static_cast<double>(value.int_value);
  const float single = static_cast<float>(number);
  const bool finite = std::isfinite(number);
  auto too_large = [&] {
    return ArgumentError("[metal::Library] Function constant " + label + " is " +
                         msl_type_name(scalar) + "; " + describe(value) +
                         " is outside its range");
  };
  if (finite && !std::isfinite(single)) throw too_large();
  if (scalar == ScalarType::f32) return bytes_of(single);
  const std::uint16_t bits =
      scalar == ScalarType::f16 ? float_to_half_bits(single) : float_to_bfloat16_bits(single);
  const bool bits_infinite = (bits & 0x7fffu) == (scalar == ScalarType::f16 ? 0x7c00u : 0x7f80u);
  if (finite && bits_infinite) throw too_large();
  return bytes_of(bits);
}

}  // namespace

const char* msl_type_name(ScalarType scalar) {
  switch (scalar) {
    case ScalarType::boolean: return "bool";
    case ScalarType::i8: return "char";
    case ScalarType::u8: return "uchar";
    case ScalarType::i16: return "short";
    case ScalarType::u16: return "ushort";
    case ScalarType::i32: return "int";
    case ScalarType::u32: return "uint";
    case ScalarType::i64: return "long";
    case ScalarType::u64: return "ulong";
    case ScalarType::f16: return "half";
    case ScalarType::bf16: return "bfloat";
    case ScalarType::f32: return "float";
    case ScalarType::f64: return "double";
    case ScalarType::unknown: break;
  }
  return "unknown";
}

void merge_reflection(KernelInfo& kernel, const std::vector<BindingInfo>& bindings) {
  reject_unsupported(kernel.name, bindings);
  auto find = [&](BindingInfo::Kind kind, int index) -> const BindingInfo* {
    for (const BindingInfo& binding : bindings)
      if (binding.kind == kind && binding.index == index) return &binding;
    return nullptr;
  };
  auto disagree = [&](const std::string& what) {
    return CompileError("[metal::Library] The MSL front end and Metal disagree about kernel '" +
                        kernel.name + "': " + what +
                        ". This is a metalcall bug: please report it with the kernel source");
  };
  for (ParamInfo& param : kernel.params) {
    const BindingInfo* binding = nullptr;
    if (binds_buffer(param.kind))
      binding = find(BindingInfo::Kind::buffer, param.binding);
    else if (param.kind == ParamKind::threadgroup_memory)
      binding = find(BindingInfo::Kind::threadgroup_memory, param.binding);
    if (!binding) continue;  // Metal may leave out an argument the kernel never reads
    if (!param.name.empty() && !binding->name.empty() && param.name != binding->name)
      throw disagree("index " + std::to_string(param.binding) + " is '" + param.name +
                     "' in the source but '" + binding->name + "' in Metal's reflection");
    param.element_size = binding->data_size;
    param.element_align = binding->alignment;
  }
  for (const BindingInfo& binding : bindings) {
    const bool known = std::any_of(kernel.params.begin(), kernel.params.end(), [&](const ParamInfo& p) {
      return p.binding == binding.index &&
             (binding.kind == BindingInfo::Kind::buffer ? binds_buffer(p.kind)
                                                        : p.kind == ParamKind::threadgroup_memory);
    });
    if (!known)
      throw disagree(std::string("Metal reports ") + kind_name(binding.kind) + " '" + binding.name +
                     "' at index " + std::to_string(binding.index) +
                     " that the front end did not find");
  }
}

KernelInfo kernel_info_from_bindings(const std::string& name, const std::vector<BindingInfo>& bindings) {
  reject_unsupported(name, bindings);
  std::vector<const BindingInfo*> ordered;
  for (const BindingInfo& binding : bindings) ordered.push_back(&binding);
  // Buffers first, then threadgroup memory, each by index: the order calls bind them in.
  std::sort(ordered.begin(), ordered.end(), [](const BindingInfo* a, const BindingInfo* b) {
    if (a->kind != b->kind) return a->kind == BindingInfo::Kind::buffer;
    return a->index < b->index;
  });
  KernelInfo kernel;
  kernel.name = name;
  for (const BindingInfo* binding : ordered) {
    ParamInfo param;
    param.position = static_cast<int>(kernel.params.size());
    param.binding = binding->index;
    param.name = binding->name;
    const bool buffer = binding->kind == BindingInfo::Kind::buffer;
    // Metal does not say whether a buffer is a pointer or a constant reference, so
    // every buffer is a pointer parameter here; only the source can tell more.
    param.kind = buffer ? ParamKind::buffer : ParamKind::threadgroup_memory;
    param.address_space = buffer ? AddressSpace::device : AddressSpace::threadgroup;
    param.type_name = binding->type_name;
    param.scalar = binding->scalar;
    param.vector_width = binding->vector_width;
    param.is_const = buffer && binding->read_only;
    param.element_size = binding->data_size;
    param.element_align = binding->alignment;
    kernel.params.push_back(std::move(param));
  }
  return kernel;
}

std::pair<int, int> parse_language_version(const std::string& text) {
  const bool shaped = text.size() == 3 && text[0] >= '1' && text[0] <= '9' && text[1] == '.' &&
                      text[2] >= '0' && text[2] <= '9';
  if (!shaped)
    throw CompileError("[metal::Device] Unknown Metal language version '" + text +
                       "': give it as major.minor, e.g. \"3.1\", or leave it empty for the newest");
  return {text[0] - '0', text[2] - '0'};
}

CompileDiagnostic parse_compile_log(const std::string& log, const std::string& source) {
  CompileDiagnostic diagnostic;
  std::size_t start = 0;
  std::string first_text;
  while (start <= log.size()) {
    std::size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    const std::string line = log.substr(start, end - start);
    start = end + 1;
    if (first_text.empty() && line.find_first_not_of(" \t\r") != std::string::npos) first_text = line;
    // Clang-style "<file>:<line>:<column>: error: <text>" (or "fatal error:").
    std::size_t marker = line.find(": error: ");
    std::size_t skip = 9;
    if (marker == std::string::npos) {
      marker = line.find(": fatal error: ");
      skip = 15;
    }
    if (marker == std::string::npos) continue;
    diagnostic.message = line.substr(marker + skip);
    const std::string where = line.substr(0, marker);  // "program_source:12:5"
    const std::size_t colon2 = where.rfind(':');
    const std::size_t colon1 = colon2 == std::string::npos || colon2 == 0 ? std::string::npos
                                                                           : where.rfind(':', colon2 - 1);
    if (colon1 != std::string::npos) {
      const std::string line_text = where.substr(colon1 + 1, colon2 - colon1 - 1);
      const std::string column_text = where.substr(colon2 + 1);
      const bool digits = !line_text.empty() && !column_text.empty() &&
                          line_text.find_first_not_of("0123456789") == std::string::npos &&
                          column_text.find_first_not_of("0123456789") == std::string::npos &&
                          line_text.size() < 9 && column_text.size() < 9;
      if (digits) {
        diagnostic.line = std::stoi(line_text);
        diagnostic.column = std::stoi(column_text);
      }
    }
    break;
  }
  if (diagnostic.message.empty()) diagnostic.message = first_text.empty() ? "unknown error" : first_text;
  if (diagnostic.line > 0) {
    std::size_t at = 0;
    for (int n = 1; n < diagnostic.line && at != std::string::npos; ++n) {
      at = source.find('\n', at);
      if (at != std::string::npos) ++at;
    }
    if (at != std::string::npos && at <= source.size()) {
      std::size_t stop = source.find('\n', at);
      if (stop == std::string::npos) stop = source.size();
      diagnostic.source_line = source.substr(at, stop - at);
      if (!diagnostic.source_line.empty() && diagnostic.source_line.back() == '\r')
        diagnostic.source_line.pop_back();
    }
  }
  return diagnostic;
}

CompileError compile_error_from_log(const std::string& scope, const std::string& what,
                                    const std::string& log, const std::string& source) {
  const CompileDiagnostic d = parse_compile_log(log, source);
  std::string message = scope + " Unable to build " + what + ": ";
  if (d.line > 0) message += "line " + std::to_string(d.line) + ", column " + std::to_string(d.column) + ": ";
  message += d.message;
  if (!d.source_line.empty()) message += "\n    " + d.source_line;
  return CompileError(message, log, d.line, d.column, d.source_line);
}

std::vector<std::uint8_t> pack_function_constant(ScalarType scalar, int width, const Argument& value,
                                                 const std::string& label) {
  const std::size_t element = scalar_bytes(scalar);
  if (element == 0)
    throw ArgumentError("[metal::Library] Function constant " + label +
                        " has a type metalcall cannot set; give it a scalar or vector type");
  if (value.kind == Argument::Kind::bytes) {
    // MSL lays out 3-vectors like 4-vectors.
    const std::size_t expected = element * static_cast<std::size_t>(width == 3 ? 4 : width);
    if (value.data.size() != expected)
      throw ArgumentError("[metal::Library] Function constant " + label + " takes " +
                          std::to_string(expected) + " bytes, got " + std::to_string(value.data.size()));
    return value.data;
  }
  const std::string type = std::string(msl_type_name(scalar)) + (width > 1 ? std::to_string(width) : "");
  if (width != 1)
    throw ArgumentError("[metal::Library] Function constant " + label + " is a " + type +
                        "; pass its value as bytes (e.g. numpy.array([...], dtype=...).tobytes())");
  const bool is_number = value.kind == Argument::Kind::integer || value.kind == Argument::Kind::floating;
  switch (scalar) {
    case ScalarType::boolean:
      if (value.kind == Argument::Kind::boolean ||
          (value.kind == Argument::Kind::integer && (value.int_value == 0 || value.int_value == 1)))
        return bytes_of(static_cast<std::uint8_t>(value.int_value != 0));
      break;
    case ScalarType::f16:
    case ScalarType::bf16:
    case ScalarType::f32:
      if (is_number) return pack_float(scalar, value, label);
      break;
    default:
      if (value.kind == Argument::Kind::integer) return pack_integer(scalar, value, label);
      break;
  }
  throw ArgumentError("[metal::Library] Function constant " + label + " is " + type + "; " +
                      describe(value) + " is not a value of that type");
}

std::uint16_t float_to_half_bits(float value) {
  std::uint32_t x;
  std::memcpy(&x, &value, sizeof x);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t exponent = (x >> 23) & 0xffu;
  std::uint32_t mantissa = x & 0x7fffffu;
  if (exponent == 0xffu)  // infinity, or NaN kept quiet
    return static_cast<std::uint16_t>(sign | 0x7c00u | (mantissa ? 0x200u | (mantissa >> 13) : 0u));
  const int e = static_cast<int>(exponent) - 127 + 15;
  if (e >= 31) return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (e <= 0) {  // a half subnormal, or zero
    if (e < -10) return static_cast<std::uint16_t>(sign);
    mantissa |= 0x800000u;
    const int shift = 14 - e;
    std::uint32_t half = mantissa >> shift;
    const std::uint32_t rest = mantissa & ((1u << shift) - 1u);
    const std::uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  std::uint32_t half = sign | (static_cast<std::uint32_t>(e) << 10) | (mantissa >> 13);
  const std::uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;  // a carry rounds up to infinity
  return static_cast<std::uint16_t>(half);
}

std::uint16_t float_to_bfloat16_bits(float value) {
  std::uint32_t x;
  std::memcpy(&x, &value, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>(x >> 16);
}

std::size_t no_copy_length(const void* data, std::size_t nbytes, std::size_t page_size,
                           std::size_t backing_bytes) {
  if (nbytes == 0 || page_size == 0) return 0;
  if (reinterpret_cast<std::uintptr_t>(data) % page_size != 0) return 0;
  const std::size_t rounded = round_up(nbytes, page_size);
  if (rounded == nbytes) return nbytes;
  return backing_bytes >= rounded ? rounded : 0;
}

}  // namespace metalcall::metal
