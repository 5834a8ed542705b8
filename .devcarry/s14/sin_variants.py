"""Session 14: is the fused sin(x)*y+2 slower than CuPy's ElementwiseKernel because of the coarsened
entry (4 consecutive elements a thread) or because of the host path? GPU time by CUDA events for
hand-written variants, wall time (waited) for mnp and CuPy's ElementwiseKernel."""
import statistics, time, os
import numpy as np
import cupy as cp
import metalcall as mc
import metalcall.numpy as mnp

SRC = r'''
extern "C" __global__ void one(const float* x, const float* y, float* o, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) o[i] = sinf(x[i]) * y[i] + 2.0f;
}
extern "C" __global__ void four_consecutive(const float4* x, const float4* y, float4* o, unsigned long long n4) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n4) { float4 a = x[i], b = y[i], r;
    r.x = sinf(a.x) * b.x + 2.0f; r.y = sinf(a.y) * b.y + 2.0f; r.z = sinf(a.z) * b.z + 2.0f; r.w = sinf(a.w) * b.w + 2.0f;
    o[i] = r; }
}
extern "C" __global__ void four_scalar(const float* x, const float* y, float* o, unsigned long long n) {
  unsigned long long t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  #pragma unroll
  for (int k = 0; k < 4; ++k) { unsigned long long i = t * 4 + k; if (i < n) o[i] = sinf(x[i]) * y[i] + 2.0f; }
}
extern "C" __global__ void four_strided(const float* x, const float* y, float* o, unsigned long long n) {
  unsigned long long t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x, T = (unsigned long long)gridDim.x * blockDim.x;
  #pragma unroll
  for (int k = 0; k < 4; ++k) { unsigned long long i = t + k * T; if (i < n) o[i] = sinf(x[i]) * y[i] + 2.0f; }
}
extern "C" __global__ void grid_stride(const float* x, const float* y, float* o, unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n; i += (unsigned long long)gridDim.x * blockDim.x)
    o[i] = sinf(x[i]) * y[i] + 2.0f;
}
'''
mod = cp.RawModule(code=SRC)
ek = cp.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = sin(x) * y + 2.0f", "sin_fma")
dev = mc.Device("cuda")
mnp.set_default_device(dev)


def gpu_ms(fn, reps=30):
    s, e = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(3): fn()
    ts = []
    for _ in range(reps):
        s.record(); fn(); e.record(); e.synchronize()
        ts.append(cp.cuda.get_elapsed_time(s, e) * 1e3)
    return statistics.median(ts)


def wall_us(fn, reps=30):
    for _ in range(3): fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter(); fn(); ts.append((time.perf_counter() - t) * 1e6)
    return statistics.median(ts)


for n in (10**7, 10**8):
    rng = np.random.default_rng(1)
    xh, yh = rng.random(n, np.float32), rng.random(n, np.float32)
    x, y, o = cp.asarray(xh), cp.asarray(yh), cp.empty(n, cp.float32)
    ref = np.sin(xh.astype(np.float64)) * yh + 2
    N = np.uint64(n)
    B = 256
    var = {
        "one a thread": lambda: mod.get_function("one")(((n + B - 1) // B,), (B,), (x, y, o, N)),
        "4 consecutive (float4)": lambda: mod.get_function("four_consecutive")(((n // 4 + B - 1) // B,), (B,), (x, y, o, np.uint64(n // 4))),
        "4 consecutive (scalar)": lambda: mod.get_function("four_scalar")(((n // 4 + B - 1) // B,), (B,), (x, y, o, N)),
        "4 strided": lambda: mod.get_function("four_strided")(((n // 4 + B - 1) // B,), (B,), (x, y, o, N)),
        "grid stride 132*16 blocks": lambda: mod.get_function("grid_stride")((132 * 16,), (B,), (x, y, o, N)),
        "cupy ElementwiseKernel": lambda: ek(x, y, o),
    }
    print(f"--- n = {n}: GPU time (events), µs")
    for name, fn in var.items():
        o.fill(0); fn(); cp.cuda.Device().synchronize()
        err = float(np.max(np.abs(cp.asnumpy(o) - ref)))
        print(f"{name:32s} {gpu_ms(fn):9.1f}   max err {err:.2e}", flush=True)
    mx, my = mnp.asarray(xh), mnp.asarray(yh)
    r = mnp.sin(mx) * my + 2
    got = np.asarray(r)
    print("mnp fused max err", float(np.max(np.abs(got - ref))))
    def ours():
        (mnp.sin(mx) * my + 2).evaluate(); dev.synchronize()
    def theirs():
        ek(x, y, o); cp.cuda.Device().synchronize()
    for rnd in range(2):
        print(f"wall, waited: mnp fused {wall_us(ours):9.1f}   cupy ElementwiseKernel {wall_us(theirs):9.1f}", flush=True)
    def ours_host():
        z = mnp.sin(mx) * my + 2
        z.evaluate()
        return z
    # Our stream is blocking: events on CuPy's (legacy) stream bracket our kernel.
    print(f"{'mnp fused (events around, blocking stream)':32s} {gpu_ms(lambda: ours_host()):9.1f}")
    print(f"{'mnp (x+y)*(x-y)+1 (same)':32s} {gpu_ms(lambda: ((mx + my) * (mx - my) + 1).evaluate()):9.1f}")
    t = time.perf_counter(); zs = [ours_host() for _ in range(50)]; t1 = time.perf_counter(); dev.synchronize()
    print(f"host time per mnp fused evaluation (50 queued): {(t1 - t) / 50 * 1e6:.1f} µs")
    t = time.perf_counter()
    for _ in range(50): ek(x, y, o)
    t1 = time.perf_counter(); cp.cuda.Device().synchronize()
    print(f"host time per ElementwiseKernel call (50 queued): {(t1 - t) / 50 * 1e6:.1f} µs")
