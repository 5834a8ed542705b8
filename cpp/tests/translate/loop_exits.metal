// Exits of loops that may call a SIMD-group function (msl/passes/simd_loop_exits.hpp): those the
// CUDA translation makes leave through metal::mtl_rt::stay_in_loop() (marked STAY, with the form
// VALUE or CALL where the returned expression is evaluated first, VALUE NARROW where a char or
// short is then returned through narrow_arg, and TYPED with the type text of the variable a braced
// list initialises first) and those it leaves alone (KEEP).
#include <metal_stdlib>
using namespace metal;

int counted(int v, int n) {
    for (int k = 0; k < 4; ++k) {
        if (k == n) return v + simd_sum(1);  // STAY VALUE
        if (k > v) return -1;  // STAY: its value calls none, the path to it is kept in the loop
        if (k == v) {
            const int left = simd_sum(2);
            for (int j = 0; j < 2; ++j)
                if (j == 1) return left;  // STAY: an inner loop's that calls none, leaving the outer one too
        }
    }
    return 0;  // KEEP: not in a loop
}

// A short returned: its value through narrow_arg too (NVVM's neg.s16, passes/small_negations.hpp).
short negated(short v, int n) {
    for (int k = 0; k < 4; ++k)
        if (k == n) return v * short(-1) + short(simd_sum(1));  // STAY VALUE NARROW
    return v;  // KEEP: not in a loop
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

struct Pair { int a; int b; };
struct Outer { Pair p; int c; };

Pair walk_pair(int v, int n) {
    int acc = 0;
    for (int k = 0; k < 4; ++k) {
        if (k == n) {
            if (v < 0) return {};  // STAY: an empty list calls none
            return {acc, simd_sum(1)};  // STAY TYPED Pair
        }
        acc += simd_sum(v);
    }
    return {acc, -1};  // KEEP
}

static inline const Outer walk_nested(int v, int n) {
    for (int k = 0; k < 4; ++k)
        if (k == n) return {{k, simd_sum(1)}, simd_max(v)};  // STAY TYPED constOuter
    return {};  // KEEP
}

METAL_FUNC float2 walk_float(int v, int n) {
    for (int k = 0; k < 4; ++k)
        if (k == n) return {0, simd_sum(float(v))};  // STAY TYPED mtl_float2 (the constant 0 converts)
    return {1, 2};  // KEEP
}

metal::array<int, 3> walk_array(int v, int n) {
    for (int k = 0; k < 4; ++k)
        if (k == n) return {k, simd_sum(1), simd_min(v)};  // STAY TYPED metal::array<int,3>
    return {};  // KEEP
}

template <class T>
T walk_template(T v, int n) {
    for (int k = 0; k < 4; ++k)
        if (k == n) return {simd_sum(v.x), simd_max(v.y)};  // STAY TYPED T
    return {};  // KEEP
}

template <class S>
typename S::value walk_dependent(int v, int n) {
    for (int k = 0; k < 4; ++k)
        if (k == n) return {simd_sum(v), k};  // STAY TYPED typenameS::value
    return {};  // KEEP
}

struct Walker {
    using value = Pair;
    int base;
    Pair walk(int v, int n) const {
        for (int k = 0; k < 4; ++k)
            if (k == n) return {base, simd_sum(v)};  // STAY TYPED Pair
        return {base, 0};  // KEEP
    }
    Walker::value walk_out(int v, int n) const;
    Pair operator()(int v, int n) const {
        for (int k = 0; k < 4; ++k)
            if (k == n) return {n, simd_prefix_exclusive_sum(v)};  // STAY TYPED Pair
        return {};  // KEEP
    }
};

Walker::value Walker::walk_out(int v, int n) const {
    for (int k = 0; k < 4; ++k)
        if (k == n) return {base + k, simd_min(v)};  // STAY TYPED Walker::value
    return {};  // KEEP
}

Pair operator*(Pair p, int n) {
    for (int k = 0; k < 4; ++k)
        if (k == n) return {p.a, simd_sum(p.b)};  // STAY: not typed, an operator's body is none of simd_callers'
    return p;  // KEEP
}

auto walk_trailing(int v, int n) -> short2 {
    for (int k = 0; k < 4; ++k)
        switch (k - n) {
        case 0:
            return {short(k), short(simd_sum(v))};  // STAY TYPED mtl_short2 (from a switch)
        default:
            break;  // KEEP: leaves the switch
        }
    return {};  // KEEP
}

kernel void loop_exits(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    int acc = 0, v = int(i) % 5;
    auto first = [&](int a) {
        for (int k = 0; k < 4; ++k)
            if (k == a) return simd_min(a) + k;  // STAY VALUE: a lambda's
        return -1;  // KEEP
    };
    auto braced = [&](int a) -> uint2 {
        for (int k = 0; k < 4; ++k)
            if (k == a) return {uint(k), simd_sum(uint(a))};  // STAY TYPED mtl_uint2 (a lambda's)
        return {};  // KEEP
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
    int j = 0;
    do {
        acc += simd_max(j);
        if (j == v) {
            acc += simd_sum(1);
            break;  // STAY: SIMD-group code before it
        }
    } while (++j < 4);
    for (int k = 0; k < 2; ++k)
        if (k == v) {
            out[2 * i] = simd_sum(k);
            return;  // STAY: the kernel's, SIMD-group code before it
        }
    walk_put(out + 2 * i, v, counted(v, acc % 4));
    Sink{out + 2 * i}.put_max(v, acc % 3);
    const Pair p = walk_pair(v, acc % 5) * (acc % 3);
    const Outer o = walk_nested(v, acc % 4);
    const float2 f = walk_float(v, acc % 5);
    const metal::array<int, 3> a = walk_array(v, acc % 5);
    const int2 t = walk_template(int2(v, acc), acc % 5);
    const Pair d = walk_dependent<Walker>(v, acc % 3);
    const Walker w{v};
    const Pair m = w.walk(v, acc % 4), n = w.walk_out(v, acc % 5), c = w(v, acc % 2);
    const short2 s = walk_trailing(v, acc % 5);
    const uint2 b = braced(v);
    out[2 * i + 1] = acc + first(v) + p.a + p.b + o.p.b + o.c + int(f.y) + a[1] + t.y + d.a + m.b + n.b + c.b + s.y +
                     int(b.y);
}
