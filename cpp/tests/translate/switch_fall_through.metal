// Switches whose cases fall through into SIMD-group functions, or whose cases of several labels or
// `default` call them (msl/passes/switch_fall_through.hpp):
// those the CUDA translation writes as guarded blocks (GUARDED) and those it leaves as they are
// (KEPT), each marked on its `switch` line.
#include <metal_stdlib>
using namespace metal;

enum class mode { first, second, third };

kernel void switches(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                     device const char* tags [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    int a = 0;
    switch (v & 3) {  // GUARDED: case 3 falls into case 2's simd_sum
    case 1: a = simd_prefix_exclusive_sum(1); break;
    case 3: { a = v * 2; }
        [[fallthrough]];
    case 2: a += simd_sum(v);
    default: break;
    }
    for (int k = 0; k < 2; ++k) {
        switch (tags[i]) {  // GUARDED: character labels, default first, a continue ending a case
        default: a += 1;
        case 'a': a += simd_max(v); continue;
        case 'b': { a -= simd_min(v); break; }
        }
        a += k;
    }
    const mode m = mode(v & 1);
    switch (m) {  // GUARDED: scoped enumerators, a nested switch of its own
    case mode::first:
        switch (v & 2) {  // GUARDED: `default` calls a SIMD-group function
        case 0: a += 1; break;
        default: a += simd_sum(1);
        }
    case mode::second: a += simd_sum(2); break;
    case mode::third: break;
    }
    switch (v & 3) {  // KEPT: no SIMD-group function
    case 1: a += 1;
    default: a += 2;
    }
    switch (v & 3) {  // KEPT: no case falls through, each of one label
    case 1: a += simd_sum(1); break;
    case 2: a += simd_sum(2); break;
    }
    switch (v & 7) {  // GUARDED: the lanes of labels 3 and 5 meet at one simd_sum
    case 3:
    case 5: a += simd_sum(3); break;
    case 6: a += 1; break;
    }
    switch (v & 7) {  // KEPT: `default` and the case of two labels call no SIMD-group function
    case 3:
    case 5: a += 3; break;
    case 6: a += simd_sum(1); break;
    default: a += 1;
    }
    switch (v & 3) {  // KEPT: a declaration at a case's top level (its block would scope it)
    case 1: int t; t = v; a += t;
    default: a += simd_sum(3);
    }
    switch (v & 3) {  // GUARDED: a declaration at the last case's top level (nothing follows its block)
    case 1: a += 1;
    default: int t = simd_sum(3); a += t;
    }
    switch (v & 3) {  // KEPT: a break that does not end its case
    case 1: if (v > 4) break; a += 1;
    default: a += simd_sum(4);
    }
    switch (int s = v & 3; s) {  // KEPT: an init-statement
    case 1: a += s;
    default: a += simd_sum(5);
    }
    switch (v & 3) {  // KEPT: a label the translation renames a type of
    case uint(1): a += 1;
    default: a += simd_sum(6);
    }
    switch (v & 3) {  // GUARDED: the preprocessor's lines are gone before the translation
    case 1: a += 1;
#if 1
    default: a += simd_sum(7);
#endif
    }
    out[i] = a;
}

int helper(int v) {
    switch (v & 3) {  // KEPT: a return in a case
    case 1: if (v > 8) return 0;
    default: return simd_sum(v);
    }
}

kernel void returns(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = helper(int(i)); }
