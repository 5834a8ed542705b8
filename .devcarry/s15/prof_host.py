"""Session 15: where the host time of mnp reductions and fused evaluations goes on the H200 host."""
import cProfile, pstats, io, time, sys
import numpy as np
import metalcall as mc, metalcall.numpy as mnp
dev = mc.Device("cuda"); mnp.set_default_device(dev)
try:
    import cupy
except ImportError:
    cupy = None

def per_call(fn, number=2000, repeat=5, sync=None):
    fn(); (sync or (lambda: mnp.synchronize(dev)))()
    walls, cpus = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.thread_time()
        for _ in range(number): fn()
        (sync or (lambda: mnp.synchronize(dev)))()
        walls.append((time.perf_counter() - t) / number * 1e6); cpus.append((time.thread_time() - c) / number * 1e6)
    return f"wall {np.median(walls):7.2f} µs  cpu {np.median(cpus):7.2f} µs"

def prof(fn, label, number=3000):
    fn(); mnp.synchronize(dev)
    pr = cProfile.Profile(); pr.enable()
    for _ in range(number): fn()
    mnp.synchronize(dev); pr.disable()
    s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(18)
    print(f"---- cProfile {label} ({number} calls)"); print("\n".join(s.getvalue().splitlines()[6:]))

rng = np.random.default_rng(0)
for n in (1000, 10**6, 10**7):
    xs = rng.random(n, dtype=np.float32); ys = rng.random(n, dtype=np.float32)
    x, y = mnp.asarray(xs), mnp.asarray(ys); xb = mnp.asarray(xs > 2)
    print(f"== n={n}")
    print("float(mnp.sum(x))          ", per_call(lambda: float(mnp.sum(x))))
    print("mnp.sum(x) (left on GPU)   ", per_call(lambda: mnp.sum(x)))
    print("bool(mnp.any(xb))          ", per_call(lambda: bool(mnp.any(xb))))
    print("(sin(x)*y+2).evaluate()    ", per_call(lambda: (mnp.sin(x) * y + 2).evaluate()))
    if cupy:
        cx, cy = cupy.asarray(xs), cupy.asarray(ys); cb = cupy.asarray(xs > 2); cz = cupy.empty_like(cx)
        k = cupy.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = sin(x) * y + 2.0f", "chain")
        cs = cupy.cuda.get_current_stream().synchronize
        print("float(cupy.sum(cx))        ", per_call(lambda: float(cupy.sum(cx)), sync=cs))
        print("cupy.sum(cx) (left on GPU) ", per_call(lambda: cupy.sum(cx), sync=cs))
        print("bool(cupy.any(cb))         ", per_call(lambda: bool(cupy.any(cb)), sync=cs))
        print("ElementwiseKernel          ", per_call(lambda: k(cx, cy, cz), sync=cs))
    if n == 10**6:
        prof(lambda: float(mnp.sum(x)), "float(mnp.sum(x)) 1e6")
        prof(lambda: bool(mnp.any(xb)), "bool(mnp.any(xb)) 1e6")
    if n == 1000:
        prof(lambda: (mnp.sin(x) * y + 2).evaluate(), "fused evaluate 1000")
