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
