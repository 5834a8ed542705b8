// Conditionals the CUDA translator rewrites (check_translations.py): branches of mixed types
// take MSL's type; the rest keep their type, reference and value category.
#include <metal_stdlib>
using namespace metal;

struct block { half d; float s; };

struct flags { uint f : 1; uint g : 3; };

template <typename T, int N>
struct holder { T v[N]; };

kernel void conditional_arms(device const block* b [[buffer(0)]], device float* out [[buffer(1)]],
                             device half* hout [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    const bool c = (i & 1) != 0;
    device const block* xb = b + i;
    int k = int(i);
    float x = 1.0f, y = 2.0f;
    // ggml's dequantize_q5_K: half with float is float.
    static_assert(is_same<decltype(i < 2 ? xb->d : xb->d / 16.f), float>::value, "half : float");
    out[i] = i < 2 ? xb->d : xb->d / 16.f;
    static_assert(is_same<decltype(c ? xb->s : xb->d), float>::value, "float : half");
    static_assert(is_same<decltype(c ? xb->d : k), half>::value, "half : int");
    static_assert(is_same<decltype(c ? k : xb->d), half>::value, "int : half");
    static_assert(is_same<remove_cv_t<decltype(c ? xb->d : 0)>, half>::value, "half : literal 0 (int_literal)");
    // Same types: unchanged, lvalues stay lvalues (assignable), prvalues stay prvalues.
    static_assert(is_same<decltype((c ? x : y)), float&>::value, "lvalue : lvalue");
    static_assert(is_same<decltype((c ? x + 1.0f : y)), float>::value, "prvalue : lvalue");
    (c ? x : y) = 3.0f;
    hout[i] = c ? xb->d : hout[i];
    // Nested: half : (float : half) is float.
    out[i] += c ? xb->d : (k > 2 ? xb->s : xb->d);
    // Left as written: a bit-field in a branch (no reference binds it).
    flags fl;
    fl.f = 1;
    fl.g = 5;
    out[i] += c ? fl.g : uint(k);
    // Left as written: a template argument's third branch (its end is the closing `>`).
    holder<float, sizeof(float) == 4 ? 2 : 3> h2;
    h2.v[0] = x + y;
    out[i] += h2.v[0];
}
