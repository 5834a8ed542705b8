import time, numpy as np, metalcall as mc, metalcall.numpy as mnp
dev = mc.Device("cpu"); mnp.set_default_device(dev)
for n in (10**6, 10**7):
    z = np.full(n, 0, np.float32); r = np.random.default_rng(0).random(n, dtype=np.float32)
    s = np.where(r > 0.5, 1, -1).astype(np.float32)
    for name, data in (("zeros", z), ("random", r), ("signs", s)):
        x = mnp.asarray(data)
        for op in ("sum", "any", "all"):
            f = getattr(mnp, op); conv = float if op == "sum" else bool
            conv(f(x))
            ts = []
            for _ in range(7):
                t = time.perf_counter(); 
                for _ in range(50 if n == 10**6 else 10): conv(f(x))
                ts.append((time.perf_counter() - t) / (50 if n == 10**6 else 10))
            print(f"n={n:.0e} {name:7s} {op}: {np.median(ts)*1e6:8.1f} µs")
