// metalcall MSL prelude: simd_ and quad_shuffle_and_fill_down/up (MSL 2.4+): a shift within groups of
// `modulo` lanes that takes the lanes shifted in from `filling_data` (MSL 6.9.2.1 and 6.9.3's tables).
#pragma once

namespace metal {

// Both group kinds share the lane arithmetic; `lane` is the caller's lane in its SIMD- or quad-group.
// Every lane takes part in both shuffles (uniform control flow), then picks one.
#define METALCALL_FILL_FUNCTIONS(P, LANE, MODULO)                                                                \
  template <class T> METAL_FUNC T P##_shuffle_and_fill_down(T data, T filling_data, unsigned short delta,       \
                                                            unsigned short modulo = MODULO METALCALL_SIMD_LINE_PARAM) { \
    const unsigned lane = LANE, base = lane - lane % modulo, j = lane % modulo + delta;                          \
    const T from_data = P##_shuffle(data, (unsigned short)(j < modulo ? base + j : lane) METALCALL_SIMD_LINE);    \
    const T from_fill = P##_shuffle(filling_data,                                                                \
                                    (unsigned short)(j >= modulo && j - modulo < modulo ? base + j - modulo : lane) \
                                        METALCALL_SIMD_LINE);                                                    \
    return j < modulo ? from_data : from_fill;                                                                   \
  }                                                                                                              \
  template <class T> METAL_FUNC T P##_shuffle_and_fill_up(T data, T filling_data, unsigned short delta,         \
                                                          unsigned short modulo = MODULO METALCALL_SIMD_LINE_PARAM) { \
    const unsigned lane = LANE, base = lane - lane % modulo, l = lane % modulo;                                  \
    const T from_data = P##_shuffle(data, (unsigned short)(l >= delta ? base + l - delta : lane) METALCALL_SIMD_LINE); \
    const T from_fill = P##_shuffle(filling_data, (unsigned short)(l < delta ? base + l + modulo - delta : lane)  \
                                                      METALCALL_SIMD_LINE);                                      \
    return l >= delta ? from_data : from_fill;                                                                   \
  }

METALCALL_FILL_FUNCTIONS(simd, mtl_rt::simd_lane_now(), mtl_rt::simd_width_now())
METALCALL_FILL_FUNCTIONS(quad, mtl_rt::simd_lane_now() & 3u, 4u)
#undef METALCALL_FILL_FUNCTIONS

}  // namespace metal
