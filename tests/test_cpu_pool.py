"""The CPU device's worker pool: dispatches that wake some workers and leave others asleep,
back to back and after the workers have gone to sleep, alone and from several threads,
give exact results (every element checked against NumPy)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import metalcall as mc

SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void fma3(const device float* x [[buffer(0)]], device float* y [[buffer(1)]],
                 constant float& k [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    y[i] = x[i] * k + float(i % 7u);
}
"""


def expected(x: np.ndarray, k: float) -> np.ndarray:
    # k is a power of two: x * k is exact, so a fused multiply-add rounds as NumPy's two steps.
    return (x * np.float32(k) + (np.arange(x.size) % 7).astype(np.float32)).astype(np.float32)


@pytest.fixture(scope="module")
def cpu():
    return mc.Device("cpu")


def test_pooled_sizes_back_to_back_and_after_sleep(cpu):
    fma3 = cpu.compile(SRC).fma3
    rng = np.random.default_rng(5)
    # Sizes that run alone, on two workers and on all of them; pauses longer than the workers'
    # spin put them to sleep, so that the next pooled call wakes them (or runs without them).
    for n in [1000, 100_000, 30_000, 1_000_000, 200_000, 3_000_000, 100_000]:
        x = rng.standard_normal(n).astype(np.float32)
        X, Y = cpu.asarray(x), cpu.empty(n, np.float32)
        for round_ in range(6):
            k = 2.0 ** (round_ - 2)
            fma3(n, X, Y, np.float32(k))
            np.testing.assert_array_equal(np.asarray(Y), expected(x, k))
            if round_ % 2:
                time.sleep(0.002)


def test_pooled_calls_from_several_threads(cpu):
    fma3 = cpu.compile(SRC).fma3
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            rng = np.random.default_rng(seed)
            n = [50_000, 400_000, 2_000_000][seed % 3]
            x = rng.standard_normal(n).astype(np.float32)
            X, Y = cpu.asarray(x), cpu.empty(n, np.float32)
            for round_ in range(15):
                k = (-2.0) ** (seed + round_ % 5)
                fma3(n, X, Y, np.float32(k))
                np.testing.assert_array_equal(np.asarray(Y), expected(x, k))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread did not finish (deadlock?)"
    assert not errors, errors[0]
