// An innermost loop in strips on CUDA (msl/passes/loop_strips.hpp): the strip holds no call,
// so NVRTC unrolls it as it unrolls the loop built without checks (check_translations.py: the
// same float multiplies in the PTX both ways, and one stop_check call, between strips). The
// FMA recurrence of benchmarks/bench_stop_checks.py.
#include <metal_stdlib>
using namespace metal;
kernel void heavy_loop(const device float* A [[buffer(0)]], const device float* B [[buffer(1)]],
                       device float* C [[buffer(2)]], constant uint& blocks [[buffer(3)]],
                       uint id [[thread_position_in_grid]]) {
  float Ai = A[id], Bi = B[id];
  float D = Ai, E = Bi, F = Ai + Bi, G = Ai - Bi;
  for (uint k = 0; k < blocks; ++k) {
    D += Ai * G;
    E += Bi * F;
    F += Ai * E;
    G += Bi * D;
  }
  C[id] = D + E + F + G;
}
