"""Compile-cache latency guards (CPU backend): a warm disk cache serves a new
process without running the host compiler at all — not `--version` to identify
it, not the preprocessor, not the build — and the compiler's cached identity
follows the binary (a changed or different compiler is identified again).

Each test points METALCALL_CXX at a wrapper script that logs every invocation,
then reads the log; all of them run in fresh interpreters with their own
METALCALL_CACHE_DIR.
"""

from __future__ import annotations

import json
import os
import shutil
import stat

import numpy as np
import pytest

import metalcall as mc

pytestmark = pytest.mark.skipif("cpu" not in mc.backends(), reason="the cpu backend is not built in")

PLAIN = """
#include <metal_stdlib>
using namespace metal;
kernel void mul(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                device float* c [[buffer(2)]], uint i [[thread_position_in_grid]]) { c[i] = a[i] * b[i]; }
"""
# Needs the preprocessor: a #define in the source and one passed as defines=.
PREPROCESSED = """
#include <metal_stdlib>
using namespace metal;
#define OFFSET 1.5f
kernel void mul(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                device float* c [[buffer(2)]], uint i [[thread_position_in_grid]]) {
#if SCALE_ON
    c[i] = a[i] * b[i] * SCALE + OFFSET;
#else
    c[i] = 0.0f;
#endif
}
"""
SOURCES = {
    "plain": (PLAIN, None, lambda a, b: a * b),
    "preprocessed": (PREPROCESSED, {"SCALE_ON": 1, "SCALE": 3.0}, lambda a, b: a * b * np.float32(3.0) + np.float32(1.5)),
}

# Compiles, looks up the kernel, runs it on fixed inputs and prints the result.
RUNNER = """
import json
import numpy as np
import metalcall as mc
a = np.linspace(-2, 2, 37, dtype=np.float32)
b = np.linspace(3, -1, 37, dtype=np.float32)
c = np.zeros(37, np.float32)
dev = mc.Device("cpu")
lib = dev.compile({source!r}, defines={defines!r})
lib.function("mul")(37, a, b, c)
print(json.dumps(c.tolist()))
"""

A = np.linspace(-2, 2, 37, dtype=np.float32)
B = np.linspace(3, -1, 37, dtype=np.float32)


def _real_compiler():
    for name in ("g++", "clang++", "c++"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no host C++ compiler")


def write_compiler(path, log, version=None):
    """A compiler wrapper that logs its arguments; with `version`, it answers --version itself."""
    lines = ["#!/bin/sh", f'echo "$*" >> "{log}"']
    if version is not None:
        lines += ['if [ "$1" = "--version" ]; then', f'  echo "{version}"', "  exit 0", "fi"]
    lines.append(f'exec "{_real_compiler()}" "$@"')
    path.write_text("\n".join(lines) + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


class Runs:
    """Runs the kernel in new processes with one cache folder and one compiler wrapper."""

    def __init__(self, run_python, tmp_path, kind="plain"):
        self.run_python = run_python
        self.cache = tmp_path / "cache"
        self.log = tmp_path / "cxx.log"
        self.compiler = write_compiler(tmp_path / "cxx", self.log)
        self.kind = kind

    def __call__(self, compiler=None, timeout=120.0):
        """Runs once; returns the compiler invocations it logged (one line each)."""
        if self.log.exists():
            self.log.unlink()
        source, defines, expect = SOURCES[self.kind]
        env = {"METALCALL_CACHE_DIR": str(self.cache), "METALCALL_CXX": str(compiler or self.compiler),
               "METALCALL_DEVICE": None}
        r = self.run_python(RUNNER.format(source=source, defines=defines), env=env, timeout=timeout)
        assert r.returncode == 0, f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
        c = np.array(json.loads(r.stdout.strip().splitlines()[-1]), dtype=np.float32)
        np.testing.assert_allclose(c, expect(A, B), rtol=1e-6, atol=1e-6)
        return self.log.read_text().splitlines() if self.log.exists() else []

    def identity_entries(self):
        return sorted((self.cache / "compilers").glob("*.id"))


@pytest.mark.parametrize("kind", sorted(SOURCES))
def test_warm_cache_new_process_runs_no_compiler(run_python, tmp_path, kind):
    runs = Runs(run_python, tmp_path, kind)
    cold = runs()
    assert "--version" in cold, cold
    assert any("-shared" in line for line in cold), cold  # the build ran
    if kind == "preprocessed":
        assert any("-E" in line.split() for line in cold), cold
    # A new process with a warm cache: no --version, no preprocessor, no build.
    assert runs() == []
    assert runs() == []


@pytest.mark.parametrize("damage", ["garbage", "empty", "truncated", "foreign", "directory", "fifo"])
def test_damaged_identity_entry_is_a_miss(run_python, tmp_path, damage):
    runs = Runs(run_python, tmp_path)
    runs()
    entries = runs.identity_entries()
    assert len(entries) == 1, entries
    entry = entries[0]
    content = entry.read_bytes()
    if damage == "garbage":
        entry.write_bytes(np.random.default_rng(3).integers(0, 256, len(content), dtype=np.uint8).tobytes())
    elif damage == "empty":
        entry.write_bytes(b"")
    elif damage == "truncated":
        entry.write_bytes(content[:-1])
    elif damage == "foreign":
        # A valid entry written for another compiler, under this compiler's name.
        other = write_compiler(tmp_path / "other-cxx", tmp_path / "other.log")
        runs(compiler=other)
        (foreign,) = [e for e in runs.identity_entries() if e != entry]
        shutil.copyfile(foreign, entry)
    elif damage == "directory":
        entry.unlink()
        entry.mkdir()
        (entry / "inside").write_text("x")
    elif damage == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs here")
        entry.unlink()
        os.mkfifo(entry)
    # A miss: the compiler is identified again (same identity, so the kernel is not rebuilt).
    assert runs(timeout=60.0) == ["--version"]
    if damage != "directory":
        assert runs() == [], "the entry was rewritten"


def test_changed_compiler_is_identified_again(run_python, tmp_path):
    runs = Runs(run_python, tmp_path)
    fake = write_compiler(tmp_path / "fake-cxx", runs.log, version="fake c++ 1.0")
    assert "--version" in runs(compiler=fake)
    assert runs(compiler=fake) == []
    # Only the timestamp changes: identified again, same identity, nothing rebuilt.
    st = fake.stat()
    os.utime(fake, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    assert runs(compiler=fake) == ["--version"]
    # A new version (same size, new timestamp): a new identity, so the kernel is rebuilt.
    write_compiler(fake, runs.log, version="fake c++ 2.0")
    os.utime(fake, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000_000))
    log = runs(compiler=fake)
    assert "--version" in log and any("-shared" in line for line in log), log
    assert runs(compiler=fake) == []


def test_another_compiler_setting_is_a_new_identity(run_python, tmp_path):
    runs = Runs(run_python, tmp_path)
    runs()
    assert runs() == []
    other = write_compiler(tmp_path / "other-cxx", runs.log)
    log = runs(compiler=other)
    assert "--version" in log and any("-shared" in line for line in log), log
    assert len(runs.identity_entries()) == 2
    assert runs() == [], "the first compiler's entries are still good"


# ---- the translation cache: a warm new process skips the MSL front end ----

# Every kind of parameter the reflection table describes: buffers of scalars, vectors,
# halves and structs, constant references, threadgroup memory, builtins of 1 to 3
# components, bindings only the compiler can evaluate (enum constants), a declared
# thread limit, barriers (threads run as fibers) and template instantiations.
RICH = """
#include <metal_stdlib>
using namespace metal;
struct Params { float scale; uint offset; };
enum Slots { kIn = 0, kOut = 1 };
kernel void affine(const device float* in [[buffer(kIn)]], device float* out [[buffer(kOut)]],
                   constant Params& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    out[i] = in[i] * p.scale + float(p.offset);
}
kernel void grid2d(device uint* out [[buffer(0)]], constant uint& width [[buffer(1)]],
                   uint2 pos [[thread_position_in_grid]], uint2 n [[threads_per_grid]]) {
    out[pos.y * width + pos.x] = pos.x * 100 + pos.y + n.x / width;
}
[[max_total_threads_per_threadgroup(64)]]
kernel void block_sum(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                      threadgroup float* part [[threadgroup(0)]], uint i [[thread_position_in_grid]],
                      ushort l [[thread_position_in_threadgroup]], uint g [[threadgroup_position_in_grid]],
                      uint n [[threads_per_threadgroup]]) {
    part[l] = in[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (l == 0) {
        float s = 0.0f;
        for (uint k = 0; k < n; ++k) s += part[k];
        out[g] = s;
    }
}
kernel void halves(const device half4* in [[buffer(0)]], device float* out [[buffer(1)]],
                   uint i [[thread_position_in_grid]]) {
    out[i] = float(in[i].x + in[i].w);
}
template <typename T>
kernel void twice(device T* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = x[i] * T(2); }
template [[host_name("twice_f")]] kernel void twice<float>(device float*, uint);
template [[host_name("twice_i")]] kernel void twice<int>(device int*, uint);
"""

# Compiles RICH, prints every kernel's reflection and the results of running them.
RICH_RUNNER = """
import json
import numpy as np
import metalcall as mc
lib = mc.Device("cpu").compile({source!r})
out = {{"names": lib.function_names, "kernels": {{}}, "results": {{}}}}
for name in lib.function_names:
    k = lib.function(name)
    out["kernels"][name] = {{"params": k.params, "max": k.max_total_threads_per_threadgroup, "repr": repr(k)}}
r = out["results"]
x = np.linspace(-3, 3, 64, dtype=np.float32)
y = np.zeros(64, np.float32)
p = np.zeros((), np.dtype([("scale", "<f4"), ("offset", "<u4")]))
p["scale"], p["offset"] = 1.5, 3
lib.affine(64, x, y, p[()])
r["affine"] = y.tolist()
g = np.zeros(8 * 4, np.uint32)
lib.grid2d((8, 4), g, np.uint32(8))
r["grid2d"] = g.tolist()
s = np.zeros(4, np.float32)
lib.block_sum(64, x, s, threadgroup=16, threadgroup_memory=16 * 4)
r["block_sum"] = s.tolist()
h = np.linspace(0, 1, 32, dtype=np.float16)
hv = np.zeros(8, np.float32)
lib.halves(8, h, hv)
r["halves"] = hv.tolist()
f = x.copy(); lib.twice_f(64, f); r["twice_f"] = f.tolist()
n = np.arange(16, dtype=np.int32); lib.twice_i(16, n); r["twice_i"] = n.tolist()
print(json.dumps(out))
"""


def _rich_expected():
    x = np.linspace(-3, 3, 64, dtype=np.float32)
    h = np.linspace(0, 1, 32, dtype=np.float16).reshape(8, 4)
    ix, iy = np.meshgrid(np.arange(8), np.arange(4))
    return {
        "affine": x * np.float32(1.5) + np.float32(3),
        "grid2d": (ix * 100 + iy + 1).ravel(),
        "block_sum": x.reshape(4, 16).sum(axis=1),
        "halves": (h[:, 0] + h[:, 3]).astype(np.float32),
        "twice_f": x * 2,
        "twice_i": np.arange(16) * 2,
    }


def _translation_entries(cache):
    return sorted((cache / "translations").glob("*.tr"))


def _entry_identity(path):
    st = path.stat()
    return (st.st_ino, st.st_mtime_ns, path.read_bytes())


def _run_rich(run_python, cache, source=RICH):
    env = {"METALCALL_CACHE_DIR": str(cache), "METALCALL_DEVICE": None}
    r = run_python(RICH_RUNNER.format(source=source), env=env)
    assert r.returncode == 0, f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    return json.loads(r.stdout.strip().splitlines()[-1])


def _check_rich_results(out):
    for name, expect in _rich_expected().items():
        np.testing.assert_allclose(np.array(out["results"][name]), expect, rtol=1e-3, atol=1e-3, err_msg=name)


def test_warm_translation_gives_identical_reflection_and_results(run_python, tmp_path):
    cache = tmp_path / "cache"
    cold = _run_rich(run_python, cache)
    _check_rich_results(cold)
    (entry,) = _translation_entries(cache)
    before = _entry_identity(entry)
    warm = _run_rich(run_python, cache)
    # A hit: the entry was read, not rewritten (a miss translates and saves it again).
    assert _entry_identity(entry) == before
    assert warm == cold
    assert warm["kernels"]["block_sum"]["max"] <= 64
    kinds = {p["kind"] for k in warm["kernels"].values() for p in k["params"]}
    assert kinds == {"buffer", "reference", "threadgroup_memory", "builtin"}, kinds


@pytest.mark.parametrize("damage", ["garbage", "empty", "truncated", "flipped", "foreign", "directory"])
def test_damaged_translation_entry_is_a_miss(run_python, tmp_path, damage):
    cache = tmp_path / "cache"
    cold = _run_rich(run_python, cache)
    (entry,) = _translation_entries(cache)
    content = entry.read_bytes()
    if damage == "garbage":
        entry.write_bytes(np.random.default_rng(5).integers(0, 256, len(content), dtype=np.uint8).tobytes())
    elif damage == "empty":
        entry.write_bytes(b"")
    elif damage == "truncated":
        entry.write_bytes(content[: len(content) // 2])
    elif damage == "flipped":
        flipped = bytearray(content)
        flipped[len(flipped) // 3] ^= 0x10
        entry.write_bytes(bytes(flipped))
    elif damage == "foreign":
        # A valid entry of another source, under this source's name.
        other = tmp_path / "other"
        _run_rich(run_python, other, RICH.replace("p.scale", "p.scale * 2.0f"))
        (foreign,) = _translation_entries(other)
        shutil.copyfile(foreign, entry)
    elif damage == "directory":
        entry.unlink()
        entry.mkdir()
    warm = _run_rich(run_python, cache)
    assert warm == cold
    if damage != "directory":
        assert entry.read_bytes() == content, "the entry was rewritten"


def test_unusable_translation_cache_still_works(run_python, tmp_path):
    cache = tmp_path / "cache"
    cold = _run_rich(run_python, cache)
    # The area is a file: nothing can be read or written there.
    blocked = tmp_path / "blocked"
    (blocked / "translations").parent.mkdir()
    (blocked / "translations").write_text("not a folder")
    assert _run_rich(run_python, blocked) == cold
    assert _run_rich(run_python, blocked) == cold


def test_read_only_translation_cache_still_works(run_python, tmp_path):
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        pytest.skip("root writes to read-only folders")
    cache = tmp_path / "cache"
    cold = _run_rich(run_python, cache)
    folders = [cache / "translations", cache / "cpu"]
    for folder in folders:
        folder.chmod(0o555)
    try:
        assert _run_rich(run_python, cache) == cold
    finally:
        for folder in folders:
            folder.chmod(0o755)


def test_defines_and_checked_mode_never_share_a_translation(run_python, tmp_path):
    source = """
#include <metal_stdlib>
using namespace metal;
kernel void fill(device float* out [[buffer(0)]], constant int& at [[buffer(1)]], uint i [[thread_position_in_grid]]) {
#ifdef VALUE
    out[i + at] = VALUE;
#else
    out[i + at] = -1.0f;
#endif
}
"""
    runner = """
import json, sys
import numpy as np
import metalcall as mc
dev = mc.Device("cpu", checked={checked})
lib = dev.compile({source!r}, defines={defines!r})
out = np.zeros(4, np.float32)
lib.fill(4, out, np.int32(0))
try:
    lib.fill(4, out, np.int32(2))  # out of bounds: caught only in checked mode
    caught = False
except mc.ExecutionError:
    caught = True
print(json.dumps({{"out": out.tolist(), "caught": caught}}))
"""
    cache = tmp_path / "cache"
    env = {"METALCALL_CACHE_DIR": str(cache), "METALCALL_DEVICE": None}

    def run(defines, checked):
        r = run_python(runner.format(source=source, defines=defines, checked=checked), env=env)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout.strip().splitlines()[-1])

    cases = [({"VALUE": 2.0}, True), ({"VALUE": 5.0}, True), (None, True), ({"VALUE": 2.0}, False)]
    for _ in range(2):  # cold, then every entry warm
        for defines, checked in cases:
            got = run(defines, checked)
            value = -1.0 if defines is None else defines["VALUE"]
            if checked:
                assert got == {"out": [value] * 4, "caught": True}, (defines, checked, got)
            else:
                assert got["out"][:2] == [value] * 2, (defines, checked, got)
                assert not got["caught"]
    assert len(_translation_entries(cache)) == len(cases)


def test_function_constants_specialise_from_a_warm_translation(run_python, tmp_path):
    source = """
#include <metal_stdlib>
using namespace metal;
constant float fc_scale [[function_constant(0)]];
constant int fc_taps [[function_constant(1)]];
constant int taps = is_function_constant_defined(fc_taps) ? fc_taps : 1;
kernel void scaled(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                   uint i [[thread_position_in_grid]]) {
    float s = 0.0f;
    for (int k = 0; k < taps; ++k) s += in[i] * float(k + 1);
    out[i] = s * fc_scale;
}
"""
    runner = """
import json
import numpy as np
import metalcall as mc
lib = mc.Device("cpu").compile({source!r})
x = np.arange(8, dtype=np.float32)
res = {{}}
for scale, taps in ((2.0, None), (0.5, 3)):
    constants = {{"fc_scale": scale}} if taps is None else {{0: scale, "fc_taps": taps}}
    k = lib.function("scaled", constants=constants)
    y = np.zeros(8, np.float32)
    k(8, x, y)
    res[str((scale, taps))] = {{"out": y.tolist(), "params": k.params}}
print(json.dumps(res))
"""
    cache = tmp_path / "cache"
    env = {"METALCALL_CACHE_DIR": str(cache), "METALCALL_DEVICE": None}
    outs = []
    for _ in range(2):
        r = run_python(runner.format(source=source), env=env)
        assert r.returncode == 0, r.stderr
        outs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    assert outs[0] == outs[1]
    x = np.arange(8, dtype=np.float32)
    np.testing.assert_allclose(outs[1]["(2.0, None)"]["out"], x * 2.0)
    np.testing.assert_allclose(outs[1]["(0.5, 3)"]["out"], x * 6 * 0.5)
    assert len(_translation_entries(cache)) == 1, "only the unspecialised translation is cached"
