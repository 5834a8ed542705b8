// Loop nests and the stop check's counters (msl/passes/loop_stops.hpp): on CUDA a loop nested in
// another loop of the same function adds its count to the outer loop's as it ends
// (__METALCALL_LOOP_NESTED), so a nest of short loops checks as often as one long loop. Each loop
// that must do so is marked NESTED; the others (outermost loops, loops in a lambda or in a local
// class's member function inside a loop) are marked OWN. Those marked STRIPS run in strips on CUDA
// (msl/passes/loop_strips.hpp: innermost loops, not counted to a literal of at most 1024, no
// `#pragma` before them), checked once per strip.
#include <metal_stdlib>
using namespace metal;

uint helper(uint z) {
  for (uint q = 0; q < z; ++q) z -= 1;  // OWN STRIPS
  return z;
}

kernel void nests(device uint* out [[buffer(0)]], constant uint& n [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
  uint x = i;
  for (uint a = 0; a < n; ++a)                         // OWN
    for (uint b = 0; b < 10u; ++b)                     // NESTED
      for (uint c = 0; c < 10u; ++c) x = x * 3u + c;   // NESTED
  do                                                   // OWN
    for (uint c = 0; c < 3u; ++c) x += c;              // NESTED
  while (x < 5u);
  for (uint b = 0; b < 10u; ++b) {                     // OWN
    auto f = [&](uint y) {
      for (uint q = 0; q < y; ++q) x += q;             // OWN STRIPS
      return x;
    };
    x += f(b);
    switch (b) {
      case 1:
        for (uint q = 0; q < b; ++q) x ^= q;           // NESTED STRIPS
        break;
      default: {
        uint q = 0;
        while (q < 2u) { x += helper(q); ++q; }        // NESTED STRIPS
      }
    }
    if (b > 3) {
      while (x > 7u) x >>= 1;                          // NESTED STRIPS
    } else if constexpr (true) {
#pragma unroll
      for (uint q = 0; q < 4u; ++q) x += q;            // NESTED
    }
    struct Local {
      uint g(uint z) {
        for (uint q = 0; q < z; ++q) z -= 1;           // OWN STRIPS
        return z;
      }
    };
    x += Local().g(b);
    for (uint q = 0; q < 2u; ++q) {                    // NESTED
      if (q == 1u) break;
      for (uint r = 0; r < 2u; ++r) {                  // NESTED
        if (r == 0u) continue;
        x += r;
      }
    }
  }
  out[i] = x;
}
