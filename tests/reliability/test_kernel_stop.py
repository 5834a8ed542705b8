"""Every kernel can be stopped (P2.4 item 4): a kernel that runs (practically) forever, on one
thread or many, with barriers or without (as fibers or as regions between barriers), is stopped by Ctrl-C during any wait (a kept
Completion's wait(), a statement call, dev.synchronize(), np.asarray(buffer), a call on NumPy
memory), by Completion.wait(timeout=...) and by a device's kernel_timeout; the Completion then
raises ExecutionError saying why, the device computes exact values afterwards and Buffers keep
their contents. A small grid with loops never holds the GIL, and the interpreter exits after
a wait that gave up. Each case runs in a fresh interpreter with a timeout: a kernel that
cannot be stopped fails the test instead of hanging it. On CUDA the same cases run when a GPU
is present (the translator's loop checks read a stop word there every 1024 iterations of a loop
nest: `nested` and `nested_blocks` run 10^6 iterations of their inner loops per outer one)."""

from __future__ import annotations

import sys

import pytest

import metalcall as mc

BACKENDS = [b for b in ("cpu", "cuda") if any(info.backend == b for info in mc.get_devices())]

# Kernels that run for 2^63 iterations of a loop (no undefined behaviour: each loop ends, in
# about 10^10 years), in every spelling of a loop, one `do` loop that never ends (its stop check
# reads a volatile word, so the compiler may not assume it ends), and one whose threads meet at
# barriers.
PRELUDE = r'''
import signal, sys, threading, time
import numpy as np
import metalcall as mc

signal.signal(signal.SIGINT, signal.default_int_handler)
SRC = """
#include <metal_stdlib>
using namespace metal;
uint next_value(uint x) { return x * 1664525u + 1013904223u; }
uint helper_loop(uint x, ulong n) { for (ulong k = 0; k < n; ++k) x = next_value(x); return x; }
kernel void for_loop(device uint* out [[buffer(0)]], constant ulong& n [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
    uint x = i;
    for (ulong k = 0; k < n; ++k) x = next_value(x);
    out[i] = x;
}
kernel void while_loop(device uint* out [[buffer(0)]], constant ulong& n [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {
    uint x = i;
    ulong k = 0;
    while (k < n) { x = next_value(x); ++k; }
    out[i] = x;
}
kernel void do_loop(device uint* out [[buffer(0)]], constant ulong& n [[buffer(1)]],
                    uint i [[thread_position_in_grid]]) {
    uint x = i;
    ulong k = 0;
    do x = next_value(x); while (++k < n);
    out[i] = x;
}
kernel void do_forever(device uint* out [[buffer(0)]], constant ulong& n [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {
    uint x = i;
    do {
        x = next_value(x);
        if ((x & 3u) == 0u) continue;
        out[i] = x;
    } while (true);
}
kernel void in_helper(device uint* out [[buffer(0)]], constant ulong& n [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
    out[i] = helper_loop(i, n);
}
kernel void in_lambda(device uint* out [[buffer(0)]], constant ulong& n [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
    auto spin = [&](uint x) { for (ulong k = 0; k < n; k++) { x = next_value(x); } return x; };
    out[i] = spin(i);
}
kernel void nested(device uint* out [[buffer(0)]], constant ulong& n [[buffer(1)]],
                   uint i [[thread_position_in_grid]]) {
    uint x = i;
    for (ulong a = 0; a < n; ++a)
        for (uint b = 0; b < 1000u; ++b)
            for (uint c = 0; c < 1000u; ++c) x = next_value(x);
    out[i] = x;
}
kernel void nested_blocks(device uint* out [[buffer(0)]], constant ulong& n [[buffer(1)]],
                          uint i [[thread_position_in_grid]]) {
    uint x = i;
    ulong a = 0;
    while (a < n) {
        if (x != 7u) {
            uint b = 0;
            do {
                switch (b & 1u) {
                case 0: for (uint c = 0; c < 1000u; ++c) { x = next_value(x); } break;
                default: { uint c = 0; while (c < 999u) { x = next_value(x); ++c; } }
                }
            } while (++b < 1000u);
        }
        ++a;
    }
    out[i] = x;
}
kernel void with_barriers(device uint* out [[buffer(0)]], constant ulong& n [[buffer(1)]],
                          uint i [[thread_position_in_grid]], uint l [[thread_position_in_threadgroup]],
                          uint size [[threads_per_threadgroup]]) {
    threadgroup uint shared[1024];
    uint x = i;
    for (ulong k = 0; k < n; ++k) {
        shared[l] = x;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        x = next_value(shared[size - 1 - l]);
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    out[i] = x;
}
kernel void with_fiber_barriers(device uint* out [[buffer(0)]], constant ulong& n [[buffer(1)]],
                                uint i [[thread_position_in_grid]], uint l [[thread_position_in_threadgroup]],
                                uint size [[threads_per_threadgroup]]) {
    threadgroup uint shared[1024];
    uint x = i;
    for (ulong k = 0; k < n; ++k) {
        shared[l] = x;
        if (size > 0) threadgroup_barrier(mem_flags::mem_threadgroup);  // in a branch: fibers
        x = next_value(shared[size - 1 - l]);
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    out[i] = x;
}
kernel void stride_zero(device uint* out [[buffer(0)]], constant ulong& n [[buffer(1)]],
                        uint i [[thread_position_in_grid]]) {
    uint x = i;
    const uint step = uint(n);  // 0: a grid-stride loop that never ends
    for (uint k = i; k < 16u; k += step) x = next_value(x);
    out[i] = x;
}
kernel void stride_wraps(device uint* out [[buffer(0)]], constant ulong& n [[buffer(1)]],
                         uint i [[thread_position_in_grid]]) {
    uint x = i;
    const uint step = uint(n >> 32);  // 2^31: k goes 0, 2^31, 0, ... below its bound for ever
    for (uint k = 0; k < 0xFFFFFFFFu; k += step) x = next_value(x);
    out[i] = x;
}
kernel void add(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) { a[i] += 1.0f; }
"""
FOREVER = np.uint64(2**63)
backend = sys.argv[1]


def check_usable(dev, lib, kept):
    """The device computes exact values, and a Buffer written before the stop is intact."""
    a = np.zeros(1000, np.float32)
    lib.add(1000, a)
    lib.add(1000, a).wait()
    assert (a == 2).all(), a
    b = dev.asarray(np.zeros(1000, np.float32))
    lib.add(1000, b).wait()
    assert (np.asarray(b) == 1).all()
    assert (np.asarray(kept) == np.arange(4096, dtype=np.float32)).all(), "a Buffer changed"
    print("usable", flush=True)
'''


def run_child(run_python, body: str, backend: str, timeout: float = 120):
    code = PRELUDE.replace("backend = sys.argv[1]", f"backend = {backend!r}") + body
    r = run_python(code, timeout=timeout)
    return r, r.stdout.split("\n")


CTRL_C = r'''
mode = MODE
dev = mc.Device(backend, checked=mode == "checked")
lib = dev.compile(SRC)
kept = dev.asarray(np.arange(4096, dtype=np.float32))
buf = dev.empty(1 << 16, np.uint32)
grid = {"pooled": 1 << 16, "fibers": (256, 4), "regions": (256, 4)}.get(mode, 1)
kernel = {"fibers": lib.with_fiber_barriers, "regions": lib.with_barriers}.get(mode, lib.for_loop)
if mode in ("fibers", "regions") and backend == "cpu":
    assert kernel.thread_schedule == mode, kernel.thread_schedule
threading.Timer(0.5, lambda: signal.raise_signal(signal.SIGINT)).start()
start = time.monotonic()
try:
    if mode in ("wait", "pooled", "fibers", "regions", "checked"):
        kernel(grid, buf, FOREVER, threadgroup=(256, 1) if mode in ("fibers", "regions") else None).wait()
    elif mode == "drop":
        kernel(grid, buf, FOREVER)  # the statement drops the Completion, which waits
        for _ in range(10**8):
            pass
    elif mode == "numpy":
        kernel(grid, np.zeros(16, np.uint32), FOREVER)  # host memory: the call itself waits
    elif mode == "synchronize":
        h = kernel(grid, buf, FOREVER)
        dev.synchronize()
    elif mode == "asarray":
        h = kernel(grid, buf, FOREVER)
        np.asarray(buf)
        for _ in range(10**8):
            pass
    print("not interrupted", flush=True)
except KeyboardInterrupt:
    print("interrupted", round(time.monotonic() - start, 2), flush=True)
check_usable(dev, lib, kept)
'''


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT from a thread")
@pytest.mark.parametrize("mode", ["wait", "drop", "numpy", "synchronize", "asarray", "pooled", "fibers", "regions",
                                  "checked"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_ctrl_c_stops_a_running_kernel(run_python, backend, mode):
    if mode == "checked" and backend != "cpu":
        pytest.skip("checked mode is the CPU's")
    r, lines = run_child(run_python, CTRL_C.replace("MODE", repr(mode)), backend)
    assert r.returncode == 0, r.stdout + r.stderr
    interrupted = [line for line in lines if line.startswith("interrupted")]
    assert interrupted, r.stdout + r.stderr
    assert float(interrupted[0].split()[1]) < 20, r.stdout
    assert "usable" in lines, r.stdout + r.stderr


WAIT_TIMEOUT = r'''
dev = mc.Device(backend)
lib = dev.compile(SRC)
kept = dev.asarray(np.arange(4096, dtype=np.float32))
buf = dev.empty(1 << 16, np.uint32)
h = getattr(lib, KERNEL)(GRID, buf, FOREVER)
start = time.monotonic()
print("returned", h.wait(timeout=0.3), flush=True)
try:
    h.wait()
    print("no error", flush=True)
except mc.ExecutionError as e:
    print("error", round(time.monotonic() - start, 2), str(e).replace("\n", " "), flush=True)
assert h.done
check_usable(dev, lib, kept)
'''


@pytest.mark.parametrize("kernel, grid", [("for_loop", 1), ("while_loop", 1), ("do_loop", 1), ("do_forever", 1),
                                          ("do_forever", 1 << 16), ("in_helper", 1),
                                          ("in_lambda", 1), ("nested", 1), ("nested_blocks", 1), ("for_loop", 1 << 16),
                                          ("stride_zero", 1), ("stride_wraps", 1),
                                          ("with_barriers", 64), ("with_fiber_barriers", 64)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_wait_timeout_stops_the_kernel(run_python, backend, kernel, grid):
    body = WAIT_TIMEOUT.replace("KERNEL", repr(kernel)).replace("GRID", repr(grid))
    r, lines = run_child(run_python, body, backend)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "returned False" in lines, r.stdout
    error = [line for line in lines if line.startswith("error")]
    assert error, r.stdout + r.stderr
    assert float(error[0].split()[1]) < 20, r.stdout
    assert "Completion.wait(timeout=...) ran out" in error[0], error[0]
    assert kernel in error[0] or backend != "cpu", error[0]  # the CPU names the kernel
    assert "usable" in lines, r.stdout + r.stderr


KERNEL_TIMEOUT = r'''
dev = mc.Device(backend, kernel_timeout=0.5)
assert dev.kernel_timeout == 0.5 and "kernel_timeout=0.5" in repr(dev), repr(dev)
lib = dev.compile(SRC)
kept = dev.asarray(np.arange(4096, dtype=np.float32))
buf = dev.empty(1 << 16, np.uint32)
# A statement call returns once the kernel is stopped (a dropped Completion keeps its error).
start = time.monotonic()
lib.in_helper(1, buf, FOREVER)
print("statement returned", round(time.monotonic() - start, 2), flush=True)
loop_free = dev.compile("""
kernel void touch(device uint* out [[buffer(0)]], uint2 i [[thread_position_in_grid]]) {
    if (i.x == 4000000000u) out[0] = i.y;
}""").touch
# Without loops a kernel stops only between chunks of threadgroups: the CPU's (a GPU runs it out).
for what in ("kept", "numpy") + (("loop-free",) if backend == "cpu" else ()):
    start = time.monotonic()
    try:
        if what == "kept":
            lib.with_barriers(64, buf, FOREVER).wait()
        elif what == "numpy":
            lib.for_loop(1 << 16, np.zeros(1 << 16, np.uint32), FOREVER)
        else:  # no loop: stopped between chunks of threadgroups (a grid of 2^46 threads)
            loop_free((2**23, 2**23), buf).wait()
        print(what, "no error", flush=True)
    except mc.ExecutionError as e:
        print(what, "error", round(time.monotonic() - start, 2), str(e).replace("\n", " "), flush=True)
check_usable(dev, lib, kept)
'''


@pytest.mark.parametrize("backend", BACKENDS)
def test_kernel_timeout_stops_long_kernels(run_python, backend):
    r, lines = run_child(run_python, KERNEL_TIMEOUT, backend)
    assert r.returncode == 0, r.stdout + r.stderr
    assert float(next(line for line in lines if line.startswith("statement returned")).split()[2]) < 20, r.stdout
    whats = ["kept", "numpy"] + (["loop-free"] if backend == "cpu" else [])
    for what in whats:
        error = [line for line in lines if line.startswith(what + " error")]
        assert error, r.stdout + r.stderr
        assert "kernel_timeout of 0.5 s" in error[0], error[0]
        assert float(error[0].split()[2]) < 20, error[0]
    assert "usable" in lines, r.stdout + r.stderr


GIL = r'''
dev = mc.Device(backend, kernel_timeout=3)
lib = dev.compile(SRC)
buf = dev.empty(16, np.uint32)
outcome = []
def call():
    try:
        lib.for_loop(GRID, np.zeros(64, np.uint32), FOREVER)  # NumPy memory: the call runs on this thread
        outcome.append("no error")
    except mc.ExecutionError as e:
        outcome.append("error " + str(e))
t = threading.Thread(target=call)
t.start()
time.sleep(0.2)
count, end = 0, time.monotonic() + 1.0
while time.monotonic() < end:  # other Python threads run while the kernel does
    count += 1
t.join(60)
print("count", count, flush=True)
print("outcome", outcome, flush=True)
'''


@pytest.mark.parametrize("grid", [1, 64])
@pytest.mark.parametrize("backend", BACKENDS)
def test_small_grids_with_loops_release_the_gil(run_python, backend, grid):
    r, lines = run_child(run_python, GIL.replace("GRID", str(grid)), backend)
    assert r.returncode == 0, r.stdout + r.stderr
    count = int(next(line for line in lines if line.startswith("count")).split()[1])
    assert count > 1000, r.stdout  # a held GIL lets the main thread count only at switch intervals
    assert "kernel_timeout" in next(line for line in lines if line.startswith("outcome")), r.stdout


EXIT = r'''
dev = mc.Device(backend)
lib = dev.compile(SRC)
buf = dev.empty(16, np.uint32)
h = lib.for_loop(1, buf, FOREVER)
print("returned", h.wait(timeout=0.3, cancel=CANCEL), flush=True)
threading.Thread(target=lambda: lib.while_loop(1, dev.empty(16, np.uint32), FOREVER), daemon=True).start()
time.sleep(0.2)
sys.exit(0)
'''


@pytest.mark.parametrize("cancel", [True, False])
@pytest.mark.parametrize("backend", BACKENDS)
def test_interpreter_exits_with_endless_work_in_flight(run_python, backend, cancel):
    r, lines = run_child(run_python, EXIT.replace("CANCEL", str(cancel)), backend, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "returned False" in lines, r.stdout



# A kernel's first call while another kernel runs without end: on CUDA the driver's lazy loading
# waited for the running kernel to load the new one's code (under a lock the stop word's write
# needs), so the call never returned and the endless kernel could not be stopped (interpreter
# exit hung). Kernels are loaded with their module now; the first call queues as any other.
FIRST_CALL = r"""
dev = mc.Device(backend)
lib = dev.compile(SRC)
buf = dev.empty(16, np.uint32)
h = lib.for_loop(1, buf, FOREVER)
print("returned", h.wait(timeout=0.3, cancel=False), flush=True)
a = dev.asarray(np.zeros(1000, np.float32))
later = lib.add(1000, a)  # add's first call, behind the endless kernel
print("queued", flush=True)
h.cancel()
try:
    h.wait()
except mc.ExecutionError as e:
    print("stopped", flush=True)
later.wait()
print("sum", float(np.asarray(a).sum()), flush=True)
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_first_call_of_a_kernel_while_another_runs_forever(run_python, backend):
    r, lines = run_child(run_python, FIRST_CALL, backend, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert lines[:3] == ["returned False", "queued", "stopped"], r.stdout + r.stderr
    assert "sum 1000.0" in lines, r.stdout


# A call on NumPy memory waits for its kernel, and on CUDA for everything before it on the
# stream, while it keeps the queue's launch lock (its copy-back must come before later launches).
# Behind an endless kernel that wait is long: a small call from another thread, which would run
# with the GIL held, must then wait for the lock without the GIL (it held it, and the process
# froze: the exit soak's hangs), Python threads must run, and everything finishes once the
# endless kernel is stopped. Thousands of calls queued behind it wait for room in the queue the
# same way (a launch into the driver's full queue waited inside the driver, with the GIL held).
BEHIND_ENDLESS = r"""
dev = mc.Device(backend)
lib = dev.compile(SRC)
buf = dev.empty(16, np.uint32)
h = lib.for_loop(1, buf, FOREVER)
print("returned", h.wait(timeout=0.3, cancel=False), flush=True)
host = np.zeros(4096, np.float32)
small = dev.asarray(np.zeros(16, np.float32))
many = dev.asarray(np.zeros(16, np.float32))
done = []
def host_call():
    lib.add(4096, host)  # waits behind the endless kernel
    done.append("host")
def small_calls():
    for _ in range(3):
        lib.add(16, small)
    done.append("small")
def flood():
    for _ in range(3000):
        lib.add(16, many)
    done.append("flood")
threads = [threading.Thread(target=f) for f in (flood, host_call, small_calls)]
threads[0].start()
time.sleep(0.3)
threads[1].start()
time.sleep(0.3)
threads[2].start()
count, end = 0, time.monotonic() + 1.0
while time.monotonic() < end:  # a held GIL lets this loop count only at switch intervals
    count += 1
print("count", count, flush=True)
print("waiting", sorted(done), flush=True)
h.cancel()
try:
    h.wait()
except mc.ExecutionError:
    print("stopped", flush=True)
for t in threads:
    t.join(30)
print("finished", sorted(done), flush=True)
dev.synchronize()
print("values", float(host.sum()), float(np.asarray(small).sum()), float(np.asarray(many).sum()), flush=True)
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_waits_behind_an_endless_kernel_leave_the_process_running(run_python, backend):
    r, lines = run_child(run_python, BEHIND_ENDLESS, backend, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert lines[0] == "returned False", r.stdout + r.stderr
    count = int(next(line for line in lines if line.startswith("count")).split()[1])
    assert count > 1000, r.stdout
    assert "waiting []" in lines, r.stdout  # every caller was still behind the endless kernel
    assert "stopped" in lines and "finished ['flood', 'host', 'small']" in lines, r.stdout + r.stderr
    assert "values 4096.0 48.0 48000.0" in lines, r.stdout


def test_cancel_stops_queued_and_running_work(cpu_device, tmp_path):
    import numpy as np

    lib = cpu_device.compile(
        "kernel void spin(device uint* out [[buffer(0)]], constant ulong& n [[buffer(1)]], uint i [[thread_position_in_grid]]) {"
        " uint x = i; for (ulong k = 0; k < n; ++k) x = x * 3u + 1u; out[i] = x; }")
    buf = cpu_device.empty(4, np.uint32)
    running = lib.spin(4, buf, np.uint64(2**63))
    queued = lib.spin(4, buf, np.uint64(2**63))
    queued.cancel()
    running.cancel()
    for h in (running, queued):
        with pytest.raises(mc.ExecutionError, match=r"Completion\.cancel\(\)"):
            h.wait()
    lib.spin(4, buf, np.uint64(3)).wait()
    x = np.arange(4, dtype=np.uint64)
    for _ in range(3):
        x = (x * 3 + 1) % 2**32
    assert (np.asarray(buf) == x).all()
    running.cancel()  # done: a no-op


@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf"), True, "1", [1]])
def test_kernel_timeout_values_are_checked(value):
    with pytest.raises(mc.ArgumentError, match="kernel_timeout"):
        mc.Device("cpu", kernel_timeout=value)
    assert mc.Device("cpu").kernel_timeout is None


def test_wait_cancel_is_checked(cpu_device):
    import numpy as np

    lib = cpu_device.compile("kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) { a[i] = 1; }")
    buf = cpu_device.empty(4, np.float32)
    h = lib.k(4, buf)
    with pytest.raises(mc.ArgumentError, match="cancel"):
        h.wait(timeout=1, cancel="yes")
    assert h.wait(timeout=30, cancel=False) is True
    assert (np.asarray(buf) == 1).all()
