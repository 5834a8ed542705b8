// The stop check's cost in a nest on CUDA (msl/passes/loop_stops.hpp): the inner loop of a
// constant trip count unrolls in full and its check folds away, leaving one addition to the
// outer loop's counter; the outer loop keeps the one check (check_translations.py counts the
// calls of stop_check in the PTX: exactly one).
#include <metal_stdlib>
using namespace metal;
kernel void nest(device const float* a [[buffer(0)]], device float* out [[buffer(1)]],
                 constant uint& n [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  float acc = 0.0f;
  for (uint k = 0; k < n; ++k) {
    for (uint u = 0; u < 4u; ++u) acc += a[(k * 4u + u) * 1024u + i];
  }
  out[i] = acc;
}
