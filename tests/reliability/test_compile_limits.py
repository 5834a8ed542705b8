"""Compiles are bounded by default (P2.4 item 5): the source's size, the preprocessed text's
size, and the time and address space of each compiler process (the C preprocessor and the C++
compiler), each with a default and an environment variable (docs/design.md, "Compile limits");
going over one is a CompileError that names its variable, the process's memory stays put, and
the next compile works. Probes this answers: a 558-byte source of doubling macros took 34 s and
459 MB of the interpreter's memory; 2^22 statements took 181 s and 1.6 GB; the compiler had no
time limit. The source-size and preprocessed-size limits hold on every backend (CUDA
preprocesses with the host's preprocessor too); the compiler-process limits are the CPU's (NVRTC
runs inside the process)."""

from __future__ import annotations

import sys
import time

import pytest

import metalcall as mc

ADD = """
kernel void add(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) { a[i] += 1.0f; }
"""


def doubling_source(levels: int) -> str:
    """Macros each twice the one before: 2^levels terms once expanded, from a source of a few hundred bytes."""
    macros = "#define D0 x\n" + "".join(f"#define D{k + 1} D{k} + D{k}\n" for k in range(levels))
    return macros + f"""
kernel void big(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {{
    float x = a[i];
    a[i] = D{levels};
}}
"""


DOUBLING_SOURCE = doubling_source(40)


def fresh(source: str) -> str:
    """The source with a constant no earlier compile had (the caches key on code, not comments)."""
    return source + f"constant float fresh_{time.time_ns()} = 1.0f;\n"


def check_usable(device) -> None:
    import numpy as np

    lib = device.compile(fresh(ADD))
    a = np.arange(8, dtype=np.float32)
    lib.add(8, a)
    np.testing.assert_array_equal(a, np.arange(8, dtype=np.float32) + 1)


def test_the_source_size_is_bounded_by_default(device):
    source = ADD + "// " + "x" * (16 << 20) + "\n"
    with pytest.raises(mc.CompileError, match="METALCALL_MAX_SOURCE_BYTES") as info:
        device.compile(source)
    assert "16 MiB" in str(info.value)
    check_usable(device)


def test_the_source_size_limit_is_configurable(device, monkeypatch):
    monkeypatch.setenv("METALCALL_MAX_SOURCE_BYTES", "200")
    with pytest.raises(mc.CompileError, match=r"the source is \d+ bytes, over the limit of 200 bytes"):
        device.compile(ADD + "// " + "y" * 200 + "\n")
    monkeypatch.setenv("METALCALL_MAX_SOURCE_BYTES", "0")  # 0 lifts it
    check_usable(device)


@pytest.mark.parametrize("variable", ["METALCALL_MAX_SOURCE_BYTES", "METALCALL_MAX_PREPROCESSED_BYTES",
                                      "METALCALL_COMPILE_TIMEOUT", "METALCALL_COMPILER_MEMORY"])
@pytest.mark.parametrize("value", ["-1", "lots", "1e999", "nan"])
def test_bad_limit_values_are_compile_errors(cpu_device, monkeypatch, variable, value):
    monkeypatch.setenv(variable, value)
    with pytest.raises(mc.CompileError, match=variable):
        cpu_device.compile(fresh("#define N 4\n" + ADD))


DOUBLING_CHILD = r'''
import sys, time
import metalcall as mc
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096
dev = mc.Device(sys.argv[1])
before = rss()
start = time.monotonic()
try:
    dev.compile(SOURCE)
    print("compiled")
except mc.CompileError as e:
    print("error", round(time.monotonic() - start, 2), (rss() - before) >> 20, str(e).splitlines()[0])
'''


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_doubling_macros_stop_at_the_preprocessed_size_limit(device, run_python, tmp_path):
    code = DOUBLING_CHILD.replace("sys.argv[1]", repr(f"{device.backend}:{device.index}"))
    code = code.replace("SOURCE", repr(fresh(DOUBLING_SOURCE)))
    r = run_python(code, env={"METALCALL_CACHE_DIR": str(tmp_path / "cache")}, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    line = r.stdout.strip().splitlines()[-1]
    assert line.startswith("error"), r.stdout + r.stderr
    _, seconds, megabytes, message = line.split(" ", 3)
    assert "METALCALL_MAX_PREPROCESSED_BYTES" in message and "32 MiB" in message, message
    assert float(seconds) < 60, line
    assert int(megabytes) < 100, line  # the interpreter never read the expansion


def test_the_preprocessed_size_limit_is_configurable(device, monkeypatch):
    monkeypatch.setenv("METALCALL_MAX_PREPROCESSED_BYTES", "100000")
    start = time.monotonic()
    with pytest.raises(mc.CompileError, match="METALCALL_MAX_PREPROCESSED_BYTES"):
        device.compile(fresh(doubling_source(30)))
    assert time.monotonic() - start < 30
    with pytest.raises(mc.CompileError, match="METALCALL_MAX_PREPROCESSED_BYTES"):
        device.compile(fresh("#define BIG " + "1 + " * 30000 + "1\n" + ADD + "constant int big = BIG;\n"))
    check_usable(device)


def long_source(statements: int) -> str:
    body = "".join(f"    x = x * {1 + (k % 97) / 1000:.4f}f + a[(i + {k}u) % 64u];\n" for k in range(statements))
    return (f"kernel void slow(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {{\n"
            f"    float x = a[i];\n{body}    a[i] = x;\n}}\n")


def test_the_compile_time_is_bounded(cpu_device, monkeypatch):
    monkeypatch.setenv("METALCALL_COMPILE_TIMEOUT", "1")
    start = time.monotonic()
    with pytest.raises(mc.CompileError, match="METALCALL_COMPILE_TIMEOUT") as info:
        cpu_device.compile(fresh(long_source(60000)))
    assert "1 s" in str(info.value)
    assert time.monotonic() - start < 60  # the translation, then one second of the compiler
    monkeypatch.delenv("METALCALL_COMPILE_TIMEOUT")
    check_usable(cpu_device)


def test_the_compiler_memory_is_bounded(cpu_device, monkeypatch):
    if not sys.platform.startswith("linux"):
        pytest.skip("the address-space limit is Linux's (prlimit)")
    monkeypatch.setenv("METALCALL_COMPILER_MEMORY", str(64 << 20))
    with pytest.raises(mc.CompileError, match="METALCALL_COMPILER_MEMORY"):
        cpu_device.compile(fresh(ADD))
    monkeypatch.delenv("METALCALL_COMPILER_MEMORY")
    check_usable(cpu_device)
