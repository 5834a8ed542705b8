"""Compiled code is unloaded when nothing uses it (issue P1.5, item 6).

A device keeps every library still referenced and the 64 it compiled or found last;
older ones are dlclose()d once the last Library, Kernel, recorded Graph or call in
flight lets go. So a program compiling an unbounded stream of distinct sources runs
in bounded memory and mapped files (before: +26.8 KB of RSS and one more mapped .so
per compile, until vm.max_map_count ran out at ~13k compiles).

Distinct sources here differ only in a trailing comment: each is a new library
(content-keyed), but their translated code is the same, so after the first build
every compile is a disk-cache hit (~4 ms) and the tests measure loading, not the C++
compiler. The slow test runs 10^4 compiles (about a minute on 2 cores);
METALCALL_DISTINCT_COMPILES sets another count (e.g. 100000 for the issue's 10^5).
Linux only: they read /proc/self/maps and /proc/self/statm.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import metalcall as mc

pytestmark = [
    pytest.mark.skipif("cpu" not in mc.backends(), reason="the cpu backend is not built in"),
    pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs /proc/self/maps (Linux)"),
]

PRELUDE = """
import json, os, sys
import numpy as np
import metalcall as mc
dev = mc.Device("cpu")
SRC = "kernel void k(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = x[i] * 2.0f + 1.0f; }\\n"
def variant(i):
    return SRC + f"// variant {i}\\n"
def mapped_kernels():
    # Our kernel objects are loaded from private copies named kernel-N.so.
    with open("/proc/self/maps") as f:
        return len({line.split()[-2] if line.rstrip().endswith("(deleted)") else line.split()[-1]
                    for line in f if "/kernel-" in line})
def maps():
    with open("/proc/self/maps") as f:
        return sum(1 for _ in f)
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
def check(lib_or_kernel, name=None):
    x = np.arange(4, dtype=np.float32)
    (lib_or_kernel.k if name is None else lib_or_kernel)(4, x)
    assert x.tolist() == [1.0, 3.0, 5.0, 7.0], x
"""


def run(tmp_path, code, timeout=600.0):
    env = dict(os.environ, METALCALL_CACHE_DIR=str(tmp_path / "cache"), METALCALL_CACHE_SIZE="8M")
    env.pop("METALCALL_DEVICE", None)
    r = subprocess.run([sys.executable, "-c", PRELUDE + code], capture_output=True, text=True, env=env,
                       timeout=timeout, cwd=tmp_path)
    assert r.returncode == 0, f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_unreferenced_libraries_are_unloaded(tmp_path):
    out = run(tmp_path, """
for i in range(300):
    check(dev.compile(variant(i)))
print(json.dumps({"mapped": mapped_kernels()}))
""")
    # The 64 most recent stay loaded; the other 236 were unloaded.
    assert 60 <= out["mapped"] <= 70, out


def test_code_in_use_outlives_the_cache(tmp_path):
    # A kernel whose Library is gone, a recorded Graph, and a call still in flight keep
    # their code loaded while hundreds of other compiles push them out of the cache.
    out = run(tmp_path, """
kernel = dev.compile(variant("kept")).k
lib = dev.compile(variant("graph"))
g_buf = dev.asarray(np.arange(4, dtype=np.float32))
with dev.record() as graph:
    lib.k(4, g_buf)
del lib
n = 1 << 22
big = dev.asarray(np.zeros(n, dtype=np.float32))
lib = dev.compile(variant("in flight"))
pending = lib.k(n, big)  # Buffer arguments: returns before the call is done
del lib
for i in range(200):
    dev.compile(variant(i))
pending.wait()
assert np.all(np.asarray(big) == 1.0)
check(kernel, "kernel")
graph.replay().wait()
assert np.asarray(g_buf).tolist() == [1.0, 3.0, 5.0, 7.0]
graph.replay().wait()
assert np.asarray(g_buf).tolist() == [3.0, 7.0, 11.0, 15.0]
del kernel, graph
for i in range(200, 300):
    dev.compile(variant(i))
print(json.dumps({"mapped": mapped_kernels()}))
""")
    assert out["mapped"] <= 70, out


@pytest.mark.slow
def test_distinct_compiles_run_in_bounded_memory(tmp_path):
    count = int(os.environ.get("METALCALL_DISTINCT_COMPILES", "10000"))
    warm = min(500, count // 4)
    out = run(tmp_path, f"""
count, warm = {count}, {warm}
for i in range(count):
    lib = dev.compile(variant(i))
    if i % 97 == 0:
        check(lib)
    if i == warm:
        base = {{"rss": rss(), "maps": maps(), "mapped": mapped_kernels()}}
print(json.dumps({{"base": base, "rss": rss(), "maps": maps(), "mapped": mapped_kernels(),
                  "cache_files": sum(len(fs) for _, _, fs in os.walk(os.environ["METALCALL_CACHE_DIR"]))}}))
""", timeout=900.0)
    base = out["base"]
    # Loaded objects and mappings stay flat after the warm-up (the in-memory cache is full by then).
    assert out["mapped"] <= 70, out
    assert out["maps"] - base["maps"] < 100, out
    # Before: +26.8 KB per compile (268 MB at 10^4). Allow 2 KB per compile of allocator noise.
    assert out["rss"] - base["rss"] < 2048 * (count - warm) + (16 << 20), out
    # The disk cache stays within METALCALL_CACHE_SIZE=8M (one object, ~3 KB per translation).
    assert out["cache_files"] < 8 * 1024 * 1024 / 2500, out
