// Argument: one value passed to a kernel call, before validation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "metalcall/buffer.hpp"
#include "metalcall/reflection.hpp"
#include "metalcall/texture.hpp"

namespace metalcall {

/** One call argument, bound by order to the kernel's [[buffer(i)]] parameters. */
struct Argument {
  // User-provided: value-initialisation (vector::emplace_back()) then runs only the member
  // initialisers below, instead of first zeroing all ~150 bytes (a `rep stos`, a few ns an argument).
  Argument() {}
  enum class Kind {
    buffer,     // a metalcall Buffer
    host,       // foreign host memory (NumPy array, bytes, …): used in place or copied
    bytes,      // raw bytes for a constant T& / by-value parameter (structs)
    integer,    // an integer scalar, packed to the declared type with range checks
    floating,   // a floating-point scalar, packed to the declared type
    boolean,    // a bool scalar
    none,       // no value (Python's None): only for a parameter its [[function_constant]] leaves out
    components, // a vector's values (a Python tuple or list), one scalar Argument each, packed like scalars
  };
  Kind kind = Kind::bytes;
  Buffer buffer;                    // Kind::buffer
  void* host_data = nullptr;        // Kind::host
  std::size_t host_nbytes = 0;      // Kind::host
  bool host_writable = false;       // Kind::host: may the kernel write it in place
  ScalarType host_scalar = ScalarType::unknown;  // Kind::host and Kind::buffer: element type if known
  bool host_raw_bytes = false;      // Kind::host and Kind::buffer: untyped bytes; any element type is fine
  bool host_big_endian = false;     // Kind::host, buffer: non-native byte order, which kernels would misread
  // Kind::host and Kind::buffer: the element type's name when MSL has no scalar for it
  // (complex, long double, datetime, str/bytes, structured…): only struct parameters take it.
  std::string host_foreign_type;
  std::size_t host_itemsize = 0;  // with host_foreign_type: bytes per element (a struct parameter's size must match)
  std::vector<std::uint8_t> data;   // Kind::bytes
  std::int64_t int_value = 0;       // Kind::integer / boolean
  bool int_is_unsigned = false;     // Kind::integer: int_value holds a uint64 bit pattern
  double float_value = 0;           // Kind::floating
  ScalarType typed_scalar = ScalarType::unknown;  // a NumPy scalar's own type, if any
  std::vector<Argument> components;  // Kind::components

  static Argument from_buffer(Buffer b) {
    Argument a;
    a.kind = Kind::buffer;
    a.buffer = std::move(b);
    return a;
  }
  static Argument from_host(void* data, std::size_t nbytes, bool writable,
                            ScalarType scalar = ScalarType::unknown, bool raw_bytes = true) {
    Argument a;
    a.kind = Kind::host;
    a.host_data = data;
    a.host_nbytes = nbytes;
    a.host_writable = writable;
    a.host_scalar = scalar;
    a.host_raw_bytes = raw_bytes;
    return a;
  }
  static Argument from_bytes(const void* p, std::size_t n) {
    Argument a;
    a.kind = Kind::bytes;
    a.data.assign(static_cast<const std::uint8_t*>(p), static_cast<const std::uint8_t*>(p) + n);
    return a;
  }
  static Argument from_int(std::int64_t v) {
    Argument a;
    a.kind = Kind::integer;
    a.int_value = v;
    return a;
  }
  static Argument from_uint(std::uint64_t v) {
    Argument a;
    a.kind = Kind::integer;
    a.int_value = static_cast<std::int64_t>(v);
    a.int_is_unsigned = true;
    return a;
  }
  static Argument from_float(double v) {
    Argument a;
    a.kind = Kind::floating;
    a.float_value = v;
    return a;
  }
  static Argument none() {
    Argument a;
    a.kind = Kind::none;
    return a;
  }
  static Argument from_components(std::vector<Argument> values) {
    Argument a;
    a.kind = Kind::components;
    a.components = std::move(values);
    return a;
  }
  static Argument from_bool(bool v) {
    Argument a;
    a.kind = Kind::boolean;
    a.int_value = v ? 1 : 0;
    return a;
  }
};

/** Grid and threadgroup sizes of one call, in threads. */
struct LaunchShape {
  std::uint64_t grid[3] = {1, 1, 1};
  std::uint32_t threadgroup[3] = {0, 0, 0};  // all 0: chosen automatically
  /** Byte lengths of [[threadgroup(i)]] parameters, by index. */
  std::vector<std::size_t> threadgroup_memory;
  /** Textures for [[texture(i)]] and samplers for [[sampler(i)]] parameters, by index (docs/design.md). */
  std::vector<Texture> textures;
  std::vector<Sampler> samplers;
};

}  // namespace metalcall
