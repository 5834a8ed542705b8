import timeit, numpy as np, metalcall as mc, metalcall.numpy as mnp
from metalcall.numpy._kernels import reduce as KR
from metalcall.numpy import _reduce as RD
dev = mc.Device("cpu"); mnp.set_default_device(dev)
f4 = np.dtype(np.float32)
for n in (1000, 100000):
    x = mnp.asarray(np.ones(n, np.float32))
    float(mnp.sum(x)); KR.reduce(dev, x._buf, f4, 1, n, 1, "sum", f4)
    T, A, D, loops, plan = KR._READY[(dev, "sum", f4, f4, 1, n, 1)]
    c, chunk, k1, grid1, k2, grid2, tg1, tg2 = plan
    def t(stmt, number=20000):
        return min(timeit.repeat(stmt, globals=dict(globals(), **locals()), number=number, repeat=7)) / number * 1e6
    print(n, "plan c", c)
    print(" float(mnp.sum(x))   ", t("float(mnp.sum(x))"))
    print(" mnp.sum(x)          ", t("mnp.sum(x)"))
    print(" RD._run             ", t("RD._run(x, None, False, 'sum', f4)"))
    print(" KR.reduce           ", t("KR.reduce(dev, x._buf, f4, 1, n, 1, 'sum', f4)"))
    if c == 1:
        print(" direct              ", t("o = dev._empty(1, D); k1(grid1, x._buf, o, n, 1, n, 1, threadgroup=tg1).wait()"))
    else:
        print(" direct              ", t("o = dev._empty(1, D); p = dev._empty(c, A); k1(grid1, x._buf, p, n, 1, chunk, c, threadgroup=tg1).wait(); k2(grid2, p, o, c, 1, c, 1, threadgroup=tg2).wait()"))
