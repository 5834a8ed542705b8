"""Seed 002 (metallic): its README session and its speed script, written for metalcall.numpy.

metallic's `import metallic as mtl` becomes `import metalcall.numpy as mnp`; the arrays stay in
device memory until printing needs them, and `mnp.sin(x) + ...` chains fuse into one kernel.

    python examples/mnp_metallic_session.py            # session, then sizes 10**4 .. 10**7
    python examples/mnp_metallic_session.py 6          # sizes up to 10**6
    METALCALL_DEVICE=cpu python examples/mnp_metallic_session.py
"""

import sys
import time

import numpy as np

import metalcall.numpy as mnp

# ---- the README session -------------------------------------------------------------------
x = mnp.random.randn(4)
y = mnp.random.randn(4)
print(x + y)
print(x)
print(y)
print(mnp.sin(x))
print(mnp.arctan2(x, y))

# ---- test_speed.py: the same operations at growing sizes, against NumPy ----------------------
top = int(sys.argv[1]) if len(sys.argv) > 1 else 7
print(f"device: {mnp.default_device().name}")


def with_mnp(n):
    x = mnp.random.randn(n)
    y = mnp.random.randn(n)
    z = mnp.arctan2(mnp.sin(x + y), y)  # one fused kernel
    return z.to_numpy()  # the result reaches the host: waits for the work


def with_numpy(n):
    x = np.random.randn(n).astype(np.float32)
    y = np.random.randn(n).astype(np.float32)
    return np.arctan2(np.sin(x + y), y)


for p in range(4, top + 1):
    n = 10**p
    with_mnp(n)  # warm up: compiles the kernels once (then cached on disk)
    t0 = time.perf_counter()
    with_mnp(n)
    t1 = time.perf_counter()
    with_numpy(n)
    t2 = time.perf_counter()
    print(f"Array size: 10 ** {p}")
    print(f"metalcall.numpy: {t1 - t0:.4f}s")
    print(f"numpy: {t2 - t1:.4f}s")
    print("===")
