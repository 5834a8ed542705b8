"""Kernels and callers that used to kill the process on the CPU backend (issue P1.5,
"Process killed by valid or plausible kernels"): integer division by zero and
INT_MIN / -1 (SIGFPE), private arrays larger than the stack (SIGSEGV), a daemon
thread inside a GIL-released call at interpreter exit (SIGABRT), and a child forked
after an async call (a hang).

Everything that could still kill or hang the interpreter runs in a subprocess with a
timeout, so a regression fails the test instead of taking pytest down.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import metalcall as mc

pytestmark = pytest.mark.skipif("cpu" not in mc.backends(), reason="the cpu backend is not built in")


def run_python(code: str, timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh interpreter; returns the finished process (never raises for a crash)."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def describe(proc: subprocess.CompletedProcess) -> str:
    how = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit status {proc.returncode}"
    return f"{how}\nstdout:\n{proc.stdout[-2000:]}\nstderr:\n{proc.stderr[-2000:]}"


# ---- integer division: never a trap; defined results (docs/design.md, "CPU runtime limits") ----

DIVISION_SRC = """
#include <metal_stdlib>
using namespace metal;

kernel void int_div(const device int* a [[buffer(0)]], const device int* b [[buffer(1)]],
                    device int* q [[buffer(2)]], device int* r [[buffer(3)]], uint i [[thread_position_in_grid]]) {
    q[i] = a[i] / b[i];
    r[i] = a[i] % b[i];
}

kernel void uint_div(const device uint* a [[buffer(0)]], const device uint* b [[buffer(1)]],
                     device uint* q [[buffer(2)]], device uint* r [[buffer(3)]], uint i [[thread_position_in_grid]]) {
    q[i] = a[i] / b[i];
    r[i] = a[i] % b[i];
}

kernel void long_div(const device long* a [[buffer(0)]], const device long* b [[buffer(1)]],
                     device long* q [[buffer(2)]], device long* r [[buffer(3)]], uint i [[thread_position_in_grid]]) {
    q[i] = a[i] / b[i];
    r[i] = a[i] % b[i];
}

// Compound assignment, vectors, swizzles, short operands and a mix with floats.
kernel void forms(const device int* a [[buffer(0)]], const device int* b [[buffer(1)]],
                  device int* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    int x = a[i];
    x /= b[i];
    int y = a[i];
    y %= b[i];
    int4 v = int4(a[i]) / int4(b[i]);
    int4 w = int4(a[i]);
    w %= b[i];
    int2 z = int2(a[i]);
    z.xy /= b[i];
    short s = short(a[i]);
    s /= short(b[i]);
    float f = float(a[i]) / 2 + float(7 % 4);     // floats divide as before
    constexpr int K = 10 / 3;                     // still a constant expression
    float lut[K * 2] = {0, 1, 2, 3, 4, 5};
    out[8 * i + 0] = x;
    out[8 * i + 1] = y;
    out[8 * i + 2] = v.w;
    out[8 * i + 3] = w.z;
    out[8 * i + 4] = z.y;
    out[8 * i + 5] = s;
    out[8 * i + 6] = int(f * 2.0f);
    out[8 * i + 7] = int(lut[K + 2]);
}
"""

INT_MIN = -(2**31)
A = np.array([7, -7, 7, -7, 5, INT_MIN, INT_MIN, 0, 123], np.int32)
B = np.array([2, 2, -2, -2, 0, -1, 0, 0, 10], np.int32)


def expected_int(a, b, bits=32):
    """The CPU backend's documented results: C truncation, x / 0 == 0, x % 0 == x,
    MIN / -1 == MAX (clamped, as MSL says), MIN % -1 == 0."""
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    q, r = [], []
    for x, y in zip(a.tolist(), b.tolist()):
        if y == 0:
            q.append(0)
            r.append(x)
        elif y == -1 and x == lo:
            q.append(hi)
            r.append(0)
        else:
            t = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
            q.append(t)
            r.append(x - t * y)
    return q, r


@pytest.fixture(scope="module")
def division_lib():
    return mc.Device("cpu").compile(DIVISION_SRC)


def test_division_by_zero_and_overflow_kill_nothing_in_a_subprocess():
    # The regression guard: if the guard were lost, SIGFPE would kill only the child.
    proc = run_python(f"""
        import numpy as np, metalcall as mc
        lib = mc.Device("cpu").compile({DIVISION_SRC!r})
        a = np.array([5, {INT_MIN}], np.int32); b = np.array([0, -1], np.int32)
        q = np.zeros(2, np.int32); r = np.zeros(2, np.int32)
        lib.int_div(2, a, b, q, r)
        print(q.tolist(), r.tolist())
    """)
    assert proc.returncode == 0, describe(proc)
    assert proc.stdout.split("\n")[0] == f"[0, {2**31 - 1}] [5, 0]"


def test_int_division_results(division_lib):
    q = np.zeros_like(A)
    r = np.zeros_like(A)
    division_lib.int_div(len(A), A, B, q, r)
    eq, er = expected_int(A, B)
    assert q.tolist() == eq
    assert r.tolist() == er


def test_uint_division_results(division_lib):
    a = np.array([7, 0xFFFFFFFF, 5, 0, 0x80000000], np.uint32)
    b = np.array([2, 0xFFFFFFFF, 0, 0, 0xFFFFFFFF], np.uint32)
    q = np.zeros_like(a)
    r = np.zeros_like(a)
    division_lib.uint_div(len(a), a, b, q, r)
    assert q.tolist() == [3, 1, 0, 0, 0]
    assert r.tolist() == [1, 0, 5, 0, 0x80000000]


def test_long_division_results(division_lib):
    lo = -(2**63)
    a = np.array([7, lo, lo, -9], np.int64)
    b = np.array([-2, -1, 0, 4], np.int64)
    q = np.zeros_like(a)
    r = np.zeros_like(a)
    division_lib.long_div(len(a), a, b, q, r)
    eq, er = expected_int(a, b, bits=64)
    assert q.tolist() == eq
    assert r.tolist() == er


def test_compound_vector_swizzle_and_short_forms(division_lib):
    a = np.array([9, -9, 9, INT_MIN, 100], np.int32)
    b = np.array([2, 0, -1, -1, 7], np.int32)
    out = np.zeros(8 * len(a), np.int32)
    division_lib.forms(len(a), a, b, out)
    out = out.reshape(-1, 8)
    eq, er = expected_int(a, b)
    assert out[:, 0].tolist() == eq  # x /= b
    assert out[:, 1].tolist() == er  # y %= b
    assert out[:, 2].tolist() == eq  # int4 / int4
    assert out[:, 3].tolist() == er  # int4 %= int
    assert out[:, 4].tolist() == eq  # .xy /= int
    # short: the division happens in int, then narrows (INT_MIN as short is 0: 0 / -1 == 0)
    shorts = a.astype(np.int16).astype(np.int64)
    sq, _ = expected_int(shorts.astype(np.int32), b.astype(np.int16).astype(np.int32))
    assert out[:, 5].tolist() == np.array(sq).astype(np.int16).tolist()
    f = a.astype(np.float32) / np.float32(2) + np.float32(3)
    assert out[:, 6].tolist() == (f * np.float32(2)).astype(np.int32).tolist()
    assert out[:, 7].tolist() == [5] * len(a)


def test_checked_mode_reports_division_by_zero():
    lib = mc.Device("cpu", checked=True).compile(DIVISION_SRC)
    q = np.zeros(2, np.int32)
    r = np.zeros(2, np.int32)
    with pytest.raises(mc.ExecutionError, match=r"int_div.*integer (division|remainder) by zero"):
        lib.int_div(2, np.array([4, 5], np.int32), np.array([2, 0], np.int32), q, r)
    # MIN / -1 is not an error: it has a defined (clamped) result.
    lib.int_div(1, np.array([INT_MIN], np.int32), np.array([-1], np.int32), q, r)
    assert q[0] == 2**31 - 1


def test_constant_divisors():
    # The checks fold away for a constant divisor; the results stay C's.
    src = "kernel void k(device int* a [[buffer(0)]], uint i [[thread_position_in_grid]]) { a[i] = a[i] / 3 % 2; }"
    a = np.arange(-8, 8, dtype=np.int32)
    expected = [int(x / 3) - int(int(x / 3) / 2) * 2 for x in a.tolist()]
    mc.Device("cpu").compile(src).k(len(a), a)
    assert a.tolist() == expected


def _device_ids():
    return [f"{info.backend}:{info.index}" for info in mc.get_devices()] or ["cpu:0"]


@pytest.mark.parametrize("device_id", _device_ids())
def test_division_agrees_across_backends_and_never_kills(device_id):
    """Every backend gives C's results for non-zero divisors (incl. negative operands);
    a zero divisor and MIN / -1 must not crash (on CUDA the value is the GPU's own)."""
    dev = mc.Device(device_id)
    lib = dev.compile(DIVISION_SRC)
    a = np.array([7, -7, 7, -7, 123, -(2**31) + 5, 2**31 - 1], np.int32)
    b = np.array([2, 2, -2, -2, 10, 3, -7], np.int32)
    q = np.zeros_like(a)
    r = np.zeros_like(a)
    lib.int_div(len(a), a, b, q, r)
    eq, er = expected_int(a, b)
    assert q.tolist() == eq and r.tolist() == er
    lib.int_div(2, np.array([5, INT_MIN], np.int32), np.array([0, -1], np.int32), q, r)  # defined on the CPU only


# ---- stack: private arrays are checked against the stack up front ----

def _big_array_kernel(n: int, barrier: bool) -> str:
    sync = "threadgroup_barrier(mem_flags::mem_threadgroup);" if barrier else ""
    return f"""
    #include <metal_stdlib>
    using namespace metal;
    kernel void big(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {{
        float tmp[{n}];
        for (int k = 0; k < {n}; ++k) tmp[k] = float(k) + float(i);
        {sync}
        out[i] = tmp[(i * 7u) % {n}u];
    }}
    """


def _stack_usage_checked() -> bool:
    """The check needs g++ >= 11 or clang >= 13 (they report frame sizes)."""
    try:
        mc.Device("cpu").compile(_big_array_kernel(1 << 22, False))
    except mc.CompileError:
        return True
    return False


@pytest.mark.parametrize("barrier, n", [(True, 100_000), (False, 3_000_000)], ids=["fiber", "thread"])
def test_private_array_over_the_stack_is_a_compile_error(barrier, n):
    if not _stack_usage_checked():
        pytest.skip("this host compiler does not report frame sizes (-fstack-usage)")
    # Compiled in a child as well: if the check were lost, the call would die with SIGSEGV.
    proc = run_python(f"""
        import numpy as np, metalcall as mc
        try:
            lib = mc.Device("cpu").compile({_big_array_kernel(n, barrier)!r})
        except mc.CompileError as e:
            print("CompileError:", e)
        else:
            lib.big(64, np.zeros(64, np.float32))
            print("ran")
    """)
    assert proc.returncode == 0, describe(proc)
    assert proc.stdout.startswith("CompileError:"), proc.stdout
    assert "kernel 'big'" in proc.stdout and "stack" in proc.stdout and "'tmp'" in proc.stdout
    assert ("256 KiB" in proc.stdout or "240 KiB" in proc.stdout) if barrier else "4096 KiB" in proc.stdout


@pytest.mark.parametrize("barrier, n", [(True, 20_000), (False, 200_000)], ids=["fiber", "thread"])
def test_private_array_within_the_stack_runs(barrier, n):
    # 80 KiB on a fiber (over the old 64 KiB fiber stack) and 800 KiB on a worker thread.
    proc = run_python(f"""
        import numpy as np, metalcall as mc
        lib = mc.Device("cpu").compile({_big_array_kernel(n, barrier)!r})
        out = np.zeros(64, np.float32)
        lib.big(64, out)
        assert out.tolist() == [float((i * 7) % {n}) + i for i in range(64)], out
        print("ok")
    """)
    assert proc.returncode == 0, describe(proc)
    assert proc.stdout.strip() == "ok"


# ---- interpreter exit with calls in flight on daemon threads ----

SHUTDOWN_CHILD = """
import sys, threading, time
import numpy as np, metalcall as mc
mode = sys.argv[1]
dev = mc.Device("cpu")
src = '''
kernel void spin(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    float x = a[i];
    for (int k = 0; k < 2000; ++k) x = x * 0.999f + 0.5f;
    a[i] = x;
}'''
lib = dev.compile(src)
buf = dev.buffer(np.zeros(1 << 16, np.float32))
count = [0]
def loop():
    while True:
        if mode == "wait":
            c = lib.spin(1 << 16, buf)
            c.wait()
        elif mode == "numpy":
            lib.spin(1 << 16, np.zeros(1 << 16, np.float32))
        else:
            count[0] += 1
            dev.compile(src + "// %d" % count[0])
for _ in range(3):
    threading.Thread(target=loop, daemon=True).start()
time.sleep(0.2)
"""


@pytest.mark.parametrize("mode", ["wait", "numpy", "compile"])
def test_exit_with_daemon_threads_inside_released_calls(mode, tmp_path):
    """Used to end in SIGABRT ("terminate called without an active exception") in most
    runs: CPython ends a daemon thread that waits for the GIL during finalization with
    pthread_exit, and its unwinding met a noexcept destructor. 20 runs per mode."""
    script = tmp_path / "child.py"
    script.write_text(SHUTDOWN_CHILD)
    env = {**os.environ, "METALCALL_CACHE_DIR": str(tmp_path / "cache") if mode == "compile"
           else os.environ.get("METALCALL_CACHE_DIR", "")}
    if not env["METALCALL_CACHE_DIR"]:
        del env["METALCALL_CACHE_DIR"]
    failures = []
    for _ in range(20):
        proc = subprocess.run([sys.executable, str(script), mode], capture_output=True, text=True, timeout=120,
                              env=env)
        if proc.returncode != 0:
            failures.append(describe(proc))
    assert not failures, f"{len(failures)}/20 runs failed; the first:\n{failures[0]}"


# ---- fork ----

FORK_CHILD = """
import os, signal, sys
import numpy as np, metalcall as mc
dev = mc.Device("cpu")
lib = dev.compile('''
kernel void add(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) { a[i] += 1.0f; }''')
n = 1 << 22
buf = dev.buffer(np.zeros(n, np.float32))
bad = []
for k in range(int(sys.argv[1])):
    c = lib.add(n, buf)          # async: the executor and the worker pool are busy
    if k % 2:
        c.wait()
    pid = os.fork()
    if pid == 0:
        signal.alarm(20)         # a hang ends the child with SIGALRM
        try:
            c.wait()             # in flight at the fork: done, or a clear DeviceError
        except mc.DeviceError as e:
            assert "fork" in str(e), e
        before = float(np.asarray(buf).view(np.float32)[0])
        lib.add(n, buf)          # a large call: the child's own workers
        c2 = lib.add(n, buf)
        c2.wait()
        after = float(np.asarray(buf).view(np.float32)[0])
        os._exit(0 if after == before + 2 else 3)
    _, status = os.waitpid(pid, 0)
    if status:
        bad.append(status)
    c.wait()
print("bad", bad)
"""


def test_forked_children_run_large_calls(tmp_path):
    """Used to hang in about a third of the children (the worker pool's counters and
    the queue's state were frozen mid-call by the fork)."""
    script = tmp_path / "fork_child.py"
    script.write_text(FORK_CHILD)
    proc = subprocess.run([sys.executable, str(script), "20"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, describe(proc)
    assert proc.stdout.strip() == "bad []", proc.stdout
