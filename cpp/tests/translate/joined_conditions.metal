// Conditions the CUDA translation must evaluate with the lanes that start them, rejoined after
// (msl/passes/simd_conditions.hpp): each line marked JOINED holds one such condition (written
// `metal::mtl_rt::joined_t{...}`), since the code it chooses calls a SIMD-group function; the
// conditions on the other lines choose no such code, or their extent is left alone.
#include <metal_stdlib>
using namespace metal;

struct Pair { int a, b; };

int summed(int v) { return simd_sum(v); }

kernel void k(device int* out [[buffer(0)]], device const int* x [[buffer(1)]],
              uint gid [[thread_position_in_grid]]) {
    const int v = x[gid];
    int a = ((v % 3 == 0) ? (x[gid ^ 1u] < 10) : (v > 4)) ? simd_xor(v) : simd_or(v);  // JOINED
    short s = v > 0 ? short(simd_sum(v)) : short(1);  // JOINED
    bool c = (v % 2 == 0) && simd_any(v > 40);  // JOINED
    bool d = v > 50 || simd_all(v > -50);  // JOINED
    int e = Pair{v, 1}.a > 2 ? summed(v) : 0;  // JOINED
    int f = (v > 3 ? 1 : 2) + (v < 0 || v > 9);
    if (v > 20 || x[(gid * 7u) % 256u] < -20) {  // JOINED
        a += simd_sum(1);
    }
    if (v > 1) {
        a += simd_sum(2);
    }
    for (int i = 0; i < v && i < 8; ++i) {  // JOINED
        a += simd_max(i);
    }
    do {
        a += simd_min(a);
    } while (a < 0 && a > -100);  // JOINED
    int g = -v > 0 ? simd_sum(v) : 0;
    out[gid] = a + s + int(c) + int(d) + e + f + g + simd_sum(a);
}
