"""The library cache: content-keyed in memory and on disk (DESIGN.md §4).

Tests of the disk cache run in subprocesses with their own temporary
METALCALL_CACHE_DIR; everything else uses the default cache.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import metalcall as mc
from mctest import check_usable

# Two kernels with the SAME name and different bodies (the bug MLX shipped twice).
SAME_NAME_A = """
kernel void k(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = x[i] + 1.0f; }
"""
SAME_NAME_B = """
kernel void k(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = x[i] * 10.0f; }
"""
SAME_NAME_C = """
kernel void k(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = x[i] - 100.0f; }
"""
EXPECTED = {
    "A": [1.0, 2.0, 3.0, 4.0],
    "B": [0.0, 10.0, 20.0, 30.0],
    "C": [-100.0, -99.0, -98.0, -97.0],
}
SOURCES = {"A": SAME_NAME_A, "B": SAME_NAME_B, "C": SAME_NAME_C}

# Compiles the named sources in order and runs each `k` on [0, 1, 2, 3].
RUNNER = """
import json, sys
import numpy as np
import metalcall as mc
sources = json.loads(sys.argv[1]) if len(sys.argv) > 1 else SOURCES_JSON
dev = mc.Device("cpu")
out = {}
for name, src in sources:
    x = np.arange(4, dtype=np.float32)
    dev.compile(src).k(4, x)
    out[name] = x.tolist()
print(json.dumps(out))
"""


def runner_code(order):
    pairs = [[name, SOURCES[name]] for name in order]
    return RUNNER.replace("SOURCES_JSON", repr(json.loads(json.dumps(pairs))))


def run_in(run_python, cache_dir, order, extra_env=None):
    env = {"METALCALL_CACHE_DIR": str(cache_dir), "METALCALL_DEVICE": None}
    env.update(extra_env or {})
    r = run_python(runner_code(order), env=env)
    assert r.returncode == 0, f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    out = json.loads(r.stdout.strip().splitlines()[-1])
    for name in order:
        assert out[name] == EXPECTED[name], (name, out[name])
    return r


def cache_files(cache_dir):
    files = []
    for root, _, names in os.walk(cache_dir):
        files += [os.path.join(root, n) for n in names]
    return files


def test_same_name_different_bodies_in_one_process(device):
    results = {}
    for name, src in SOURCES.items():
        x = np.arange(4, dtype=np.float32)
        device.compile(src).k(4, x)
        results[name] = x.tolist()
    assert results == EXPECTED
    # And again, now from the in-memory cache, in another order.
    for name in ("C", "A", "B"):
        x = np.arange(4, dtype=np.float32)
        device.compile(SOURCES[name]).k(4, x)
        assert x.tolist() == EXPECTED[name]


def test_libraries_of_same_name_kernels_coexist(device):
    ka, kb = device.compile(SAME_NAME_A).k, device.compile(SAME_NAME_B).k
    x = np.arange(4, dtype=np.float32)
    ka(4, x)
    kb(4, x)
    ka(4, x)
    np.testing.assert_array_equal(x, (np.arange(4) + 1) * 10 + 1)


def test_recompiling_gives_the_same_behaviour(device):
    for _ in range(3):
        x = np.arange(4, dtype=np.float32)
        device.compile(SAME_NAME_B).k(4, x)
        assert x.tolist() == EXPECTED["B"]


def test_fresh_cache_dir_is_populated(run_python, tmp_path):
    cache = tmp_path / "cache" / "nested"  # created on demand
    run_in(run_python, cache, ["A", "B"])
    files = cache_files(cache)
    assert files, "the first run writes compiled libraries to METALCALL_CACHE_DIR"
    assert not [f for f in files if f.endswith(".tmp")], "no temporary files are left behind"
    # A second process reads them back; same-name kernels are still told apart.
    run_in(run_python, cache, ["B", "A", "C"])


def test_cache_dir_env_is_respected_not_default(run_python, tmp_path):
    cache = tmp_path / "mine"
    run_in(run_python, cache, ["C"])
    assert cache.is_dir() and cache_files(cache)


def test_corrupt_cache_files_are_a_miss(run_python, tmp_path):
    cache = tmp_path / "cache"
    run_in(run_python, cache, ["A", "B"])
    files = sorted(cache_files(cache))
    assert files
    # Every file is overwritten with garbage: random bytes, nothing, or its first half.
    rng = np.random.default_rng(1)
    for k, f in enumerate(files):
        size = os.path.getsize(f)
        mode = ("random", "empty", "truncated")[k % 3]
        if mode == "random":
            data = rng.integers(0, 256, size=max(16, size), dtype=np.uint8).tobytes()
        elif mode == "empty":
            data = b""
        else:
            with open(f, "rb") as fh:
                data = fh.read()[: size // 2]
        with open(f, "wb") as fh:
            fh.write(data)
    run_in(run_python, cache, ["B", "A"])  # a miss, not a crash: recompiled
    run_in(run_python, cache, ["A", "B"])  # and the rewritten entries are good


def test_concurrent_processes_share_a_cold_cache(tmp_path):
    # Writes are atomic (temp file + rename): racing processes all succeed.
    cache = tmp_path / "cache"
    env = dict(os.environ, METALCALL_CACHE_DIR=str(cache))
    env.pop("METALCALL_DEVICE", None)
    script = tmp_path / "race.py"
    script.write_text(runner_code(["A", "B"]))
    procs = [
        subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for _ in range(3)
    ]
    for p in procs:
        stdout, stderr = p.communicate(timeout=300)
        assert p.returncode == 0, stderr
        out = json.loads(stdout.strip().splitlines()[-1])
        assert out == {"A": EXPECTED["A"], "B": EXPECTED["B"]}
    assert not [f for f in cache_files(cache) if f.endswith(".tmp")]


def _make_read_only(path):
    for root, dirs, files in os.walk(path):
        for f in files:
            os.chmod(os.path.join(root, f), 0o444)
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o555)
    os.chmod(path, 0o555)


def _make_writable(path):
    os.chmod(path, 0o755)
    for root, dirs, files in os.walk(path):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)


@pytest.mark.parametrize("populated", [True, False], ids=["populated", "empty"])
def test_read_only_cache_dir_still_works(run_python, tmp_path, populated):
    cache = tmp_path / "ro-cache"
    cache.mkdir()
    if populated:
        run_in(run_python, cache, ["A"])
    before = sorted(cache_files(cache))
    _make_read_only(cache)
    try:
        if os.access(cache, os.W_OK):
            pytest.skip("chmod does not make a folder read-only for this user (root?)")
        run_in(run_python, cache, ["A", "B"])  # a hit (if populated) and a miss
        assert sorted(cache_files(cache)) == before, "nothing is written to a read-only cache"
    finally:
        _make_writable(cache)


def test_unwritable_cache_location_still_works(run_python, tmp_path):
    # Works for root too: a cache "folder" below a regular file can never be created.
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    run_in(run_python, blocker / "cache", ["A", "C"])
    assert blocker.read_text() == "not a folder"


def test_cache_dir_that_is_a_file(run_python, tmp_path):
    f = tmp_path / "cache-file"
    f.write_bytes(b"\x00garbage")
    run_in(run_python, f, ["B"])
    assert f.read_bytes() == b"\x00garbage"


def test_in_process_cache_survives_errors(device):
    with pytest.raises(mc.CompileError):
        device.compile(SAME_NAME_A.replace("1.0f", "1.0f +"))
    x = np.arange(4, dtype=np.float32)
    device.compile(SAME_NAME_A).k(4, x)
    assert x.tolist() == EXPECTED["A"]
    check_usable(device)
