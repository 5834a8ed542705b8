"""A kernel calling sin, exp and log on the CPU backend: a fast-math build (glibc's vector math,
8-lane thread loop: docs/design.md "Vector math on the CPU") against a precise build (libm's
scalar functions) and NumPy, side by side in one process.

    python benchmarks/bench_cpu_vector_math.py [--n 1000000] [--rounds 9]

Results are checked against NumPy (float64) first; the rounds take turns (peers_common).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import metalcall as mc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers_common import Row, check, machine, measure, render  # noqa: E402

SOURCE = """
#include <metal_stdlib>
using namespace metal;
kernel void transcendental(device const float* a [[buffer(0)]], device float* o [[buffer(1)]],
                           uint i [[thread_position_in_grid]]) {
    o[i] = sin(a[i]) + exp(a[i] * 0.5f) + log(a[i] + 4.0f);
}
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=1e6)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    n = int(args.n)
    dev = mc.Device("cpu")
    a = np.random.default_rng(0).uniform(-3, 3, n).astype(np.float32)
    A, out = dev.asarray(a), dev.empty(n, np.float32)
    want = np.sin(a.astype(np.float64)) + np.exp(a * 0.5) + np.log(a + 4.0)
    kernels = {"fast math": dev.compile(SOURCE).transcendental,
               "precise": dev.compile(SOURCE, fast_math=False).transcendental}
    for label, k in kernels.items():
        k(n, A, out)
        dev.synchronize()
        check(np.allclose(np.asarray(out), want, rtol=1e-5, atol=1e-5), label)

    def ours(k):
        def run(number):
            for _ in range(number):
                k(n, A, out)
            dev.synchronize()
        return run

    def numpy(number):
        for _ in range(number):
            np.sin(a) + np.exp(a * np.float32(0.5)) + np.log(a + np.float32(4))

    row = Row(f"sin(a) + exp(a/2) + log(a+4), {n:.0e} float32 (call + wait)")
    row.candidates = [(f"metalcall, {label}", ours(k)) for label, k in kernels.items()] + [("NumPy", numpy)]
    print(f"# vector math on {dev.name}\n\n{machine()}; NumPy {np.__version__}; {args.rounds} rounds\n")
    measure(row, args.rounds, 0.05)
    print(render([row]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
