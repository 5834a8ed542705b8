"""Session 16: the layers of bool(mnp.any(x)) at 1e6 float32 on the CPU device (medians of 9 rounds)."""
import timeit, numpy as np, metalcall as mc, metalcall.numpy as mnp, statistics
from metalcall.numpy._kernels import reduce as KR, cache
dev = mc.Device("cpu"); mnp.set_default_device(dev)
n = 10**6
z = np.full(n, 0, np.float32)
x = mnp.asarray(z); src = x._buf
bool(mnp.any(x))
f4 = np.dtype(np.float32); b1 = np.dtype(np.bool_)
run = KR._WHOLE[(id(dev), "any", f4, b1, n)]
k = cache.kernel(dev, KR._decide_source("any", "float"), "red", fast_math=True)
out = dev.empty(1, np.bool_)
chunk = 15632; cc = 64; tg = 2
stmts = {
 "kernel, out reused": lambda: k(cc, src, out, n, chunk, threadgroup=tg).wait(),
 "kernel + dev.empty": lambda: k(cc, src, dev.empty(1, np.bool_), n, chunk, threadgroup=tg).wait(),
 "kernel + _empty": lambda: k(cc, src, dev._empty(1, np.bool_), n, chunk, threadgroup=tg).wait(),
 "run(src)": lambda: run(src),
 "mnp.any(x)": lambda: mnp.any(x),
 "bool(mnp.any(x))": lambda: bool(mnp.any(x)),
}
res = {}
for r in range(9):
    for name, f in stmts.items():
        res.setdefault(name, []).append(min(timeit.repeat(f, number=300, repeat=3)) / 300 * 1e6)
for key, v in res.items():
    print(f"{key:22s} %.2f" % statistics.median(v))
