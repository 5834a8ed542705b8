// metalcall MSL prelude: simd_shuffle_and_fill_down/up (MSL 2.4+): a shift within groups of
// `modulo` lanes that takes the lanes shifted in from `filling_data`.
#pragma once

namespace metal {

template <class T> METAL_FUNC T simd_shuffle_and_fill_down(T data, T filling_data, unsigned short delta,
                                                           unsigned short modulo = mtl_rt::simd_width_now() METALCALL_SIMD_LINE_PARAM) {
  const unsigned lane = mtl_rt::simd_lane_now(), base = lane - lane % modulo, j = lane % modulo + delta;
  // Every lane takes part in both shuffles (uniform control flow), then picks one.
  const T from_data = simd_shuffle(data, (unsigned short)(j < modulo ? base + j : lane) METALCALL_SIMD_LINE);
  const T from_fill = simd_shuffle(filling_data, (unsigned short)(j >= modulo && j - modulo < modulo ? base + j - modulo : lane) METALCALL_SIMD_LINE);
  return j < modulo ? from_data : from_fill;
}

template <class T> METAL_FUNC T simd_shuffle_and_fill_up(T data, T filling_data, unsigned short delta,
                                                         unsigned short modulo = mtl_rt::simd_width_now() METALCALL_SIMD_LINE_PARAM) {
  const unsigned lane = mtl_rt::simd_lane_now(), base = lane - lane % modulo, l = lane % modulo;
  const T from_data = simd_shuffle(data, (unsigned short)(l >= delta ? base + l - delta : lane) METALCALL_SIMD_LINE);
  const T from_fill = simd_shuffle(filling_data, (unsigned short)(l < delta ? base + l + modulo - delta : lane) METALCALL_SIMD_LINE);
  return l >= delta ? from_data : from_fill;
}

}  // namespace metal
