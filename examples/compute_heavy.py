"""Seed 000's compute-heavy kernel: 400 unrolled blocks of 8 operations per element.

    python examples/compute_heavy.py [--count 4194304] [--device cpu]

Reports GFLOP/s counting operations as the post does: 8 per block x 400
blocks + 6 others per element. Checks a sample against NumPy in float64.
"""

import argparse
import time

import metalcall as mc
import numpy as np

BLOCKS = 400
OPS_PER_ELEMENT = 8 * BLOCKS + 6
CHECK_ELEMENTS = 4096

kernel = """
#include <metal_stdlib>
using namespace metal;
kernel void helloABC(const device float *A [[buffer(0)]],
                     const device float *B [[buffer(1)]],
                     device float *C [[buffer(2)]],
                     uint id [[thread_position_in_grid]]) {
    float Ai = A[id];
    float Bi = B[id];
    float D = Ai;
    float E = Bi;
    float F = Ai+Bi;
    float G = Ai-Bi;
"""
kernel += BLOCKS * """
    D += Ai * G;
    E += Bi * F;
    F += Ai * E;
    G += Bi * D;
"""
kernel += """
    C[id] = D + E + F + G;
}
"""


def reference(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """The same recurrence in float64 NumPy."""
    A, B = A.astype(np.float64), B.astype(np.float64)
    D, E, F, G = A.copy(), B.copy(), A + B, A - B
    for _ in range(BLOCKS):
        D += A * G
        E += B * F
        F += A * E
        G += B * D
    return D + E + F + G


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=float, default=1 << 22, help="number of elements (default 4194304)")
    parser.add_argument("--repeat", type=int, default=5, help="timed calls; the fastest is reported (default 5)")
    parser.add_argument("--device", help="device name or index (default: mc.Device())")
    args = parser.parse_args()
    count = int(args.count)

    dev = mc.Device() if args.device is None else mc.Device(int(args.device) if args.device.isdigit() else args.device)
    start = time.perf_counter()
    helloABC = dev.kernel(kernel).function("helloABC")
    compile_seconds = time.perf_counter() - start

    # A >= 0 and B <= 0 keep the values bounded: each pair (D, G), (E, F) then rotates
    # instead of growing; with A, B > 0 they overflow float32 after about 100 blocks.
    rng = np.random.default_rng(0)
    A = dev.asarray(rng.random(count, dtype=np.float32))
    B = dev.asarray(-rng.random(count, dtype=np.float32))
    C = dev.empty(count, np.float32)

    helloABC(count, A, B, C).wait()  # warm-up, and the result to check
    want = reference(np.asarray(A)[:CHECK_ELEMENTS], np.asarray(B)[:CHECK_ELEMENTS])
    got = np.asarray(C)[:CHECK_ELEMENTS]
    if not np.allclose(got, want, rtol=1e-3, atol=1e-3 * np.abs(want).max()):
        raise SystemExit(f"wrong result on {dev.name}: max error {np.abs(got - want).max():.3g}")

    best = float("inf")
    for _ in range(args.repeat):
        start = time.perf_counter()
        helloABC(count, A, B, C).wait()
        best = min(best, time.perf_counter() - start)
    print(f"{count} elements x {OPS_PER_ELEMENT} operations on {dev.name} (compiled in {compile_seconds:.2f} s), "
          f"results checked")
    print(f"  {best:.3f} s per call, {count * OPS_PER_ELEMENT / best / 1e9:.1f} GFLOP/s")


if __name__ == "__main__":
    main()
