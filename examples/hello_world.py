"""Seed 000's "hello world": multiply ten numbers on the default device.

The metalcompute program from the post, with only its import changed.
"""

from array import array

import metalcall as mc

# The metal kernel to run
kernel = """
#include <metal_stdlib>;
using namespace metal;
kernel void helloABC(const device float *A [[buffer(0)]],
                     const device float *B [[buffer(1)]],
                     device float *C [[buffer(2)]],
                     uint id [[thread_position_in_grid]]) {
    C[id] = A[id] * B[id];
}
"""
count = 10
# Create a metal device to run kernel with
dev = mc.Device()
# Create a compiled kernel to run
helloABC = dev.kernel(kernel).function("helloABC")
# Make a buffer for the result
A = array("f", range(10))  # 0..9
B = array("f", range(10, 20))  # 10...19
C = dev.buffer(count * 4)  # 4 because a float32 needs 4 bytes
C_view = memoryview(C).cast("f")
# Run the kernel count times
helloABC(count, A, B, C)
# Print the second result which should be 1.0 * 11.0 = 11.0
print(C_view[1])

expected = [a * b for a, b in zip(A, B)]
if list(C_view) != expected:
    raise SystemExit(f"wrong result on {dev.name}: {list(C_view)} != {expected}")
print(f"all {count} products correct on {dev.name}")
