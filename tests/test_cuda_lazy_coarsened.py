"""A CUDA compile leaves out the coarsened entry points (backends/cuda/cuda_compiler.cpp,
CudaModules::coarsened): they double the back end's share of a cold compile, and only launches of
2^18 threads or more take them. The first such launch builds them (a second NVRTC compile, seen in
the METALCALL_COMPILE_TIMES lines of a process with an empty cache); smaller launches never do, and
the results are NumPy's either way. Skipped without CUDA."""

from __future__ import annotations

import json

import numpy as np
import pytest

import metalcall as mc

HAS_CUDA = "cuda" in mc.backends() and any(d.backend == "cuda" for d in mc.get_devices())
pytestmark = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")

PROBE = """
import json, sys
import numpy as np
import metalcall as mc
from metalcall import _bench
dev = mc.Device("cuda")
fn = dev.compile(_bench.MUL_SOURCE).mul
marks = []
for n in (1000, 1 << 20, (1 << 20) + 3):
    a = np.arange(n, dtype=np.float32); b = np.full(n, 0.5, np.float32)
    C = dev.zeros(n, np.float32)
    fn(n, dev.asarray(a), dev.asarray(b), C)  # Buffers: 16-byte aligned, as a coarsened launch needs
    np.testing.assert_array_equal(np.asarray(C), a * b)
    print("after", n, file=sys.stderr, flush=True)
"""


def test_coarsened_entries_are_built_at_the_first_large_launch(run_python, tmp_path):
    r = run_python(PROBE, env={"METALCALL_CACHE_DIR": str(tmp_path / "cache"), "METALCALL_COMPILE_TIMES": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    events = []
    for line in r.stderr.splitlines():
        if line.startswith("after "):
            events.append(line)
        elif line.startswith("metalcall compile times: nvrtc"):
            events.append("nvrtc")
    # One build at compile time, none for 1000 threads, one (the coarsened entries) at 2^20, no more.
    assert events == ["nvrtc", "after 1000", "nvrtc", f"after {1 << 20}", f"after {(1 << 20) + 3}"], json.dumps(events)


def test_a_first_large_launch_recorded_then_replayed():
    # The coarsened build happens while the recording is captured as a graph (on a thread of its
    # own: the capturing thread may not load a module); every replay gives NumPy's product.
    dev = mc.Device("cuda")
    src = """
#include <metal_stdlib>
using namespace metal;
kernel void scaled(const device float* a [[buffer(0)]], device float* c [[buffer(1)]],
                   uint i [[thread_position_in_grid]]) { c[i] = a[i] * 3.0f; }
"""
    n = (1 << 20) + 5
    a = np.arange(n, dtype=np.float32)
    A, C = dev.asarray(a), dev.zeros(n, np.float32)
    fn = dev.compile(src).scaled
    with dev.record() as g:
        fn(n, A, C)
    for _ in range(2):
        g.replay().wait()
        np.testing.assert_array_equal(np.asarray(C), a * np.float32(3))
    D = dev.zeros(n, np.float32)
    fn(n, A, D)  # a direct call, after the recording
    np.testing.assert_array_equal(np.asarray(D), a * np.float32(3))
