"""Seed 000's billion multiplies: C = A * B over 1e9 float32 elements.

    python examples/billion.py [--count 1e8] [--repeat 10] [--device cpu]

Times one call, then --repeat calls issued back to back ("100 times with no
gaps" in the post), and reports GB/s counting 12 bytes per element (read A and
B, write C). Needs 12 bytes of memory per element: use --count to scale down.
"""

import argparse
import time

import metalcall as mc
import numpy as np

SOURCE = """
#include <metal_stdlib>
using namespace metal;
kernel void helloABC(const device float *A [[buffer(0)]],
                     const device float *B [[buffer(1)]],
                     device float *C [[buffer(2)]],
                     uint id [[thread_position_in_grid]]) {
    C[id] = A[id] * B[id];
}
"""
CHECK_CHUNK = 1 << 24


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=float, default=1e9, help="number of elements (default 1e9)")
    parser.add_argument("--repeat", type=int, default=10, help="back-to-back calls to time (default 10)")
    parser.add_argument("--device", help="device name or index (default: mc.Device())")
    args = parser.parse_args()
    count = int(args.count)

    dev = mc.Device() if args.device is None else mc.Device(int(args.device) if args.device.isdigit() else args.device)
    if dev.memory_size and 12 * count > 0.8 * dev.memory_size:
        raise SystemExit(f"{count:.0e} elements need {12 * count / 2**30:.1f} GiB; "
                         f"{dev.name} has {dev.memory_size / 2**30:.1f} GiB: use a smaller --count")
    helloABC = dev.kernel(SOURCE).function("helloABC")

    # Random data, tiled: drawing a billion random numbers takes longer than multiplying them.
    rng = np.random.default_rng(0)
    A = np.resize(rng.random(1 << 20, dtype=np.float32), count)
    B = np.resize(rng.random((1 << 20) + 1, dtype=np.float32), count)  # a different period than A
    C = dev.buffer(count * 4)  # 4 because a float32 needs 4 bytes

    start = time.perf_counter()
    helloABC(count, A, B, C)
    single = time.perf_counter() - start

    start = time.perf_counter()
    [helloABC(count, A, B, C) for _ in range(args.repeat)][-1]  # the post's idiom: dropping the list waits
    back_to_back = (time.perf_counter() - start) / args.repeat

    # The kernel and NumPy round a float32 product the same way: the results must be identical.
    C_view = np.asarray(C).view(np.float32)
    for begin in range(0, count, CHECK_CHUNK):
        end = min(count, begin + CHECK_CHUNK)
        if not np.array_equal(C_view[begin:end], A[begin:end] * B[begin:end]):
            raise SystemExit(f"wrong result on {dev.name} in elements {begin}..{end}")

    print(f"{count:.0e} multiplies on {dev.name}, results checked")
    timings = [("first call (first touch of C's memory)", single),
               (f"{args.repeat} calls back to back, per call", back_to_back)]
    for label, seconds in timings:
        print(f"  {label}: {seconds:.3f} s, {count / seconds / 1e9:.2f} billion multiplies/s, "
              f"{12 * count / seconds / 1e9:.1f} GB/s")


if __name__ == "__main__":
    main()
