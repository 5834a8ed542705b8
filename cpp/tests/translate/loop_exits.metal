// Exits of loops that may call a SIMD-group function (msl/passes/simd_loop_exits.hpp): those the
// CUDA translation makes leave through metal::mtl_rt::stay_in_loop() (marked STAY, with the form
// VALUE or CALL where the returned expression is evaluated first) and those it leaves alone (KEEP).
#include <metal_stdlib>
using namespace metal;

int counted(int v, int n) {
    for (int k = 0; k < 4; ++k) {
        if (k == n) return v + simd_sum(1);  // STAY VALUE
        if (k > v) return -1;  // STAY: its value calls none, the path to it is kept in the loop
    }
    return 0;  // KEEP: not in a loop
}

void put(device int* o, int value) { *o = value; }

void walk_put(device int* o, int v, int n) {
    for (int k = 0; k < 4; ++k)
        if (k == n) return put(o, simd_max(v));  // STAY CALL
}

struct Sink {
    device int* o;
    void put_max(int v, int n) const;
};

void Sink::put_max(int v, int n) const {
    for (int k = 0; k < 4; ++k)
        if (k == n) return put(o, simd_max(v) + 1);  // STAY CALL: a member defined outside its struct
}

kernel void loop_exits(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    int acc = 0, v = int(i) % 5;
    auto first = [&](int a) {
        for (int k = 0; k < 4; ++k)
            if (k == a) return simd_min(a) + k;  // STAY VALUE: a lambda's
        return -1;  // KEEP
    };
    for (int k = 0; k < 8; ++k) {
        switch (k % 3) {
        case 0:
            acc += simd_sum(k);
            break;  // KEEP: leaves the switch
        default:
            if (acc > 100) break;  // KEEP: the switch's too
            acc += 1;
        }
        for (int j = 0; j < k; ++j) {
            if (j == v) break;  // KEEP: a loop that calls none
            acc += j;
        }
        if (k == v) {
            acc += simd_prefix_exclusive_sum(acc);
            break;  // STAY
        }
    }
    for (int k = 0; k < 8; ++k) {
        if (k == v) break;  // KEEP: a loop that calls none
    }
    while (true) {
        if (simd_any(acc > 3)) break;  // STAY
        acc += 1;
    }
    walk_put(out + 2 * i, v, counted(v, acc % 4));
    Sink{out + 2 * i}.put_max(v, acc % 3);
    out[2 * i + 1] = acc + first(v);
}
