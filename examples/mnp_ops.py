"""Seed 003 (MetalPy): its operations — relu, sigmoid, gelu, softmax, layernorm, argmax, matmul,
transpose, slice, gather — built from metalcall.numpy in a few lines each, checked against NumPy.
Seed 004 (pydotcompute's Metal backend): allocate / zeros / copy to and from the device /
synchronize / memory info / timed execution, the same flow with metalcall.numpy.

    python examples/mnp_ops.py
"""

import time

import numpy as np

import metalcall.numpy as mnp


def relu(x):
    return mnp.maximum(x, 0.0)


def sigmoid(x):
    return 1.0 / (1.0 + mnp.exp(-x))


def gelu(x):  # the tanh approximation MetalPy uses
    return 0.5 * x * (1.0 + mnp.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def softmax(x, axis=-1):
    e = mnp.exp(x - mnp.max(x, axis=axis, keepdims=True))
    return e / mnp.sum(e, axis=axis, keepdims=True)


def layernorm(x, eps=1e-5):
    mean = mnp.mean(x, axis=-1, keepdims=True)
    var = mnp.var(x, axis=-1, keepdims=True)
    return (x - mean) / mnp.sqrt(var + eps)


def np_gelu(a):
    return 0.5 * a * (1.0 + np.tanh(0.7978845608028654 * (a + 0.044715 * a * a * a)))


def main():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 128)).astype(np.float32)
    b = rng.standard_normal((128, 32)).astype(np.float32)
    x, w = mnp.asarray(a), mnp.asarray(b)

    checks = {
        "relu": (relu(x), np.maximum(a, 0)),
        "sigmoid": (sigmoid(x), 1 / (1 + np.exp(-a))),
        "gelu": (gelu(x), np_gelu(a)),
        "softmax": (softmax(x), np.exp(a - a.max(-1, keepdims=True)) / np.exp(a - a.max(-1, keepdims=True)).sum(-1, keepdims=True)),
        "layernorm": (layernorm(x), (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5)),
        "argmax": (mnp.argmax(x, axis=1), a.argmax(1)),
        "matmul": (x @ w, a @ b),
        "transpose": (x.T, a.T),
        "slice": (x[8:16, ::4], a[8:16, ::4]),
        "gather": (mnp.take(x, mnp.asarray([3, 1, 4, 1, 5]), axis=0), a[[3, 1, 4, 1, 5]]),
        "sum": (mnp.sum(x), a.sum()),
        "max": (mnp.max(x), a.max()),
    }
    for name, (got, want) in checks.items():
        ok = np.allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4)
        print(f"{name:10s} {'ok' if ok else 'MISMATCH'}")
        assert ok, name

    # pydotcompute's flow: allocate, zeros, copy to/from device, synchronize, memory info, timing
    dev = mnp.default_device()
    buf = mnp.empty((1000,), dtype=mnp.float32)  # allocate
    zeros = mnp.zeros((1000,), dtype=mnp.float32)  # allocate_zeros
    on_dev = mnp.asarray(np.arange(1000, dtype=np.float32))  # copy_to_device
    t0 = time.perf_counter()
    result = mnp.sqrt(on_dev * on_dev + zeros)  # a fused kernel, submitted asynchronously
    result.evaluate()
    mnp.synchronize()  # synchronize
    elapsed = (time.perf_counter() - t0) * 1e3
    host = result.to_numpy()  # copy_to_host (zero-copy where memory is host-visible)
    assert np.allclose(host, np.arange(1000))
    info = {"device": dev.name, "memory_size": dev.memory_size, "unified_memory": dev.unified_memory,
            "buffer_bytes": buf.nbytes + zeros.nbytes + on_dev.nbytes + result.nbytes}
    print(f"memory info: {info}")
    print(f"execution time: {elapsed:.3f} ms")
    del buf, zeros, on_dev, result  # free: the buffers go when the last reference does
    mnp.clear_pool()  # clear_cache: release recycled result buffers
    print("all MetalPy-style ops match NumPy")


if __name__ == "__main__":
    main()
