"""Session 16: bool(mnp.any(x)), its runner and numba's parallel count of nonzeros at 1e6 (medians of 15 rounds)."""
import timeit, numpy as np, metalcall as mc, metalcall.numpy as mnp, numba, statistics
from metalcall.numpy._kernels import reduce as KR
dev = mc.Device("cpu"); mnp.set_default_device(dev)
f4 = np.dtype(np.float32); b1 = np.dtype(np.bool_)
@numba.njit(parallel=True, cache=False)
def nonzeros(a):
    c = 0
    for i in numba.prange(a.size):
        c += a[i] != 0
    return c
@numba.njit(parallel=True, cache=False)
def total(a):
    c = 0.0
    for i in numba.prange(a.size):
        c += a[i]
    return c
n = 10**6
z = np.full(n, 0, np.float32)
x = mnp.asarray(z)
bool(mnp.any(x)); nonzeros(z); total(z); float(mnp.sum(x))
run = KR._WHOLE[(id(dev), "any", f4, b1, n)]
res = {k: [] for k in ("mnp", "run", "numba", "nb_total", "mnp_sum")}
for r in range(15):
    res["mnp"].append(min(timeit.repeat("bool(mnp.any(x))", globals=globals(), number=500, repeat=3))/500*1e6)
    res["run"].append(min(timeit.repeat("run(x._buf)", globals=globals(), number=500, repeat=3))/500*1e6)
    res["numba"].append(min(timeit.repeat("nonzeros(z) > 0", globals=globals(), number=500, repeat=3))/500*1e6)
    res["nb_total"].append(min(timeit.repeat("total(z)", globals=globals(), number=500, repeat=3))/500*1e6)
    res["mnp_sum"].append(min(timeit.repeat("float(mnp.sum(x))", globals=globals(), number=500, repeat=3))/500*1e6)
for k, v in res.items():
    print(f"{k:10s} median {statistics.median(v):6.2f}  min {min(v):6.2f}")
print("numba threads", numba.get_num_threads(), numba.threading_layer())
