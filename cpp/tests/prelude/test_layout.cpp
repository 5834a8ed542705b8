// sizeof / alignof / member offsets of every MSL type must match MSL's, since
// buffers are shared with NumPy and with Metal itself.
#include "metal_stdlib.h"
#include "check.h"

#include <cstddef>
#include <type_traits>

using namespace metal;

// Size and alignment of an N-vector of S-byte components, per MSL.
template <class V, int S, int N> static void check_vector(const char* name) {
  const int n4 = N == 3 ? 4 : N;
  const bool ok = sizeof(V) == size_t(S * n4) && alignof(V) == size_t(S * n4);
  if (!ok) std::printf("layout of %s: sizeof %zu alignof %zu\n", name, sizeof(V), alignof(V));
  CHECK(ok);
  static_assert(std::is_trivially_copyable<V>::value && std::is_trivial<V>::value && std::is_standard_layout<V>::value,
                "vectors must be trivial standard-layout types");
}
template <class V, int S, int N> static void check_packed(const char* name) {
  const bool ok = sizeof(V) == size_t(S * N) && alignof(V) == size_t(S);
  if (!ok) std::printf("layout of %s: sizeof %zu alignof %zu\n", name, sizeof(V), alignof(V));
  CHECK(ok);
  static_assert(std::is_trivial<V>::value && std::is_standard_layout<V>::value, "packed vectors are trivial");
}
#define CHECK_FAMILY(S, BYTES)                                  \
  check_vector<mtl_##S##2, BYTES, 2>(#S "2");                   \
  check_vector<mtl_##S##3, BYTES, 3>(#S "3");                   \
  check_vector<mtl_##S##4, BYTES, 4>(#S "4");                   \
  check_packed<mtl_packed_##S##2, BYTES, 2>("packed_" #S "2");  \
  check_packed<mtl_packed_##S##3, BYTES, 3>("packed_" #S "3");  \
  check_packed<mtl_packed_##S##4, BYTES, 4>("packed_" #S "4");

int main() {
  CHECK(sizeof(mtl_uchar) == 1 && sizeof(mtl_ushort) == 2 && sizeof(mtl_uint) == 4 && sizeof(mtl_ulong) == 8);
  CHECK(sizeof(long) == 8);  // MSL long is 64-bit
  CHECK(sizeof(mtl_half) == 2 && alignof(mtl_half) == 2 && sizeof(mtl_bfloat) == 2 && alignof(mtl_bfloat) == 2);
  CHECK(sizeof(int8_t) == 1 && sizeof(int16_t) == 2 && sizeof(int32_t) == 4 && sizeof(int64_t) == 8);
  CHECK(sizeof(uint64_t) == 8 && sizeof(size_t) == sizeof(void*) && sizeof(ptrdiff_t) == sizeof(void*));
  CHECK_FAMILY(bool, 1)
  CHECK_FAMILY(char, 1)
  CHECK_FAMILY(uchar, 1)
  CHECK_FAMILY(short, 2)
  CHECK_FAMILY(ushort, 2)
  CHECK_FAMILY(int, 4)
  CHECK_FAMILY(uint, 4)
  CHECK_FAMILY(long, 8)
  CHECK_FAMILY(ulong, 8)
  CHECK_FAMILY(half, 2)
  CHECK_FAMILY(float, 4)
  CHECK_FAMILY(bfloat, 2)

  // Components sit at i * sizeof(T); the rest of a 3-vector is padding.
  CHECK(offsetof(mtl_float4, x) == 0 && offsetof(mtl_float4, y) == 4 && offsetof(mtl_float4, z) == 8 &&
        offsetof(mtl_float4, w) == 12);
  CHECK(offsetof(mtl_float3, z) == 8 && offsetof(mtl_packed_float3, z) == 8);
  CHECK(offsetof(mtl_float4, r) == 0 && offsetof(mtl_float4, a) == 12);
  mtl_float4 v = mtl_float4(1, 2, 3, 4);
  float raw[4];
  std::memcpy(raw, &v, sizeof raw);
  CHECK(raw[0] == 1 && raw[3] == 4);

  // A struct as a kernel would declare it for a buffer.
  struct Particle {
    mtl_float3 position;         // offset 0, 16 bytes
    float mass;                  // offset 16
    mtl_packed_float3 velocity;  // offset 20, 12 bytes
    mtl_half2 uv;                // offset 32
  };
  CHECK(offsetof(Particle, mass) == 16 && offsetof(Particle, velocity) == 20 && offsetof(Particle, uv) == 32);
  CHECK(sizeof(Particle) == 48 && alignof(Particle) == 16);

  // Matrices: C columns, each laid out like vec<T, R>.
  CHECK(sizeof(mtl_float2x2) == 16 && alignof(mtl_float2x2) == 8);
  CHECK(sizeof(mtl_float2x3) == 32 && sizeof(mtl_float2x4) == 32);
  CHECK(sizeof(mtl_float3x2) == 24 && sizeof(mtl_float3x3) == 48 && sizeof(mtl_float3x4) == 48);
  CHECK(sizeof(mtl_float4x2) == 32 && sizeof(mtl_float4x3) == 64 && sizeof(mtl_float4x4) == 64);
  CHECK(alignof(mtl_float4x4) == 16 && alignof(mtl_float3x3) == 16);
  CHECK(sizeof(mtl_half2x2) == 8 && sizeof(mtl_half3x3) == 24 && sizeof(mtl_half4x4) == 32);
  static_assert(std::is_trivial<mtl_float4x4>::value && std::is_standard_layout<mtl_float4x4>::value,
                "matrices are trivial standard-layout types");
  return finish("test_layout");
}
