#!/usr/bin/env python3
"""Threadgroup-memory bank conflicts of metalcall.numpy's fft_regs kernels, by replaying the index
arithmetic of every stage's reads and writes (no GPU needed). A warp's 8-byte accesses are served
in wavefronts of 16 threads, 16-byte ones in wavefronts of 8 (32 banks of 4 bytes); a stage's
figure is the most distinct elements one bank serves in one wavefront (1: conflict-free).

    python tools/fft_banks.py                 # the lengths and lane counts below
    python tools/fft_banks.py --unpadded      # the same without the j + j / 16 padding
"""

from __future__ import annotations

import argparse

from metalcall.numpy._kernels import fft_regs as FR

CASES = [  # (length, lanes, itemsize, loads lanes inner)
    (1024, 4, 8, True), (1024, 4, 8, False), (1024, 8, 8, True), (1024, 2, 16, True), (1024, 2, 16, False),
    (64, 32, 8, True), (243, 8, 8, True), (1000, 4, 8, False),
]


def stage_conflicts(n: int, lanes: int, itemsize: int, load_lanes_inner: bool, padded: bool = True) -> list:
    """[(stage, radix, 'read' or 'write', worst n-way)] of the threadgroup accesses of one group."""
    pad = (lambda j: j + (j >> 4)) if padded else (lambda j: j)
    radices, tpc = FR.stages(n), FR.threads_per_lane(n)
    threads, stride = lanes * tpc, FR.lane_stride(n, lanes, itemsize)
    wave, words = 128 // itemsize, itemsize // 4
    out, p = [], 1
    for st, R in enumerate(radices):
        T, final = n // R, st == len(radices) - 1
        inner = final or load_lanes_inner  # the kernel's thread -> (lane, butterfly) mapping
        for kind in ("read", "write"):
            if (kind == "read" and st == 0) or (kind == "write" and final):
                continue  # those go to device memory
            worst = 1
            for q in range(-(-T // tpc)):
                for r in range(R):
                    for w0 in range(0, threads, wave):
                        banks: dict = {}
                        for tid in range(w0, min(w0 + wave, threads)):
                            c, t = (tid % lanes, tid // lanes) if inner else (tid // tpc, tid % tpc)
                            i = t + q * tpc
                            if i >= T:
                                continue
                            k = i % p
                            j = i + r * T if kind == "read" else (i - k) * R + k + r * p
                            a = c * stride + pad(j)
                            banks.setdefault(a * words % 32, set()).add(a)
                        worst = max([worst] + [len(v) for v in banks.values()])
            out.append((st, R, kind, worst))
        p *= R
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--unpadded", action="store_true")
    a = ap.parse_args()
    for n, lanes, itemsize, inner in CASES:
        rows = stage_conflicts(n, lanes, itemsize, inner, not a.unpadded)
        print(f"n={n:5d} lanes={lanes:2d} {'complex64 ' if itemsize == 8 else 'complex128'} "
              f"loads {'lanes inner' if inner else 'rows inner '}: "
              + ", ".join(f"{kind[0]}{st}(R{R}) {w}" for st, R, kind, w in rows))


if __name__ == "__main__":
    main()
