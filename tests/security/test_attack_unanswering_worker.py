"""Attack: a sandbox worker that stops answering (security, issue P2.4).

The sandbox's threat model (docs/security.md) assumes the kernel runs arbitrary native code in
the worker process; such code can leave the worker unable or unwilling to answer (its loader
lock taken, its request loop overwritten). A call's wait was bounded (Ctrl-C, kernel_timeout=,
a stop grace), but the requests that run no kernel (the start-up check in Device(), loading a
kernel object, preparing and defining a kernel, releases) waited for ever and ignored Ctrl-C:
the caller hung for good. Here the worker is a stand-in for a taken-over one
(METALCALL_SANDBOX_WORKER, a script that maps the control page and answers the first N
requests, then none), so the test needs no hole in the sandbox. Each wait now ends: after
METALCALL_SANDBOX_REPLY_TIMEOUT seconds (default 30) with a DeviceError or an ExecutionError
naming the kernel, or at Ctrl-C with KeyboardInterrupt; the worker is ended, the interpreter
goes on, Buffers keep their contents and the real worker takes the next call.
"""

from __future__ import annotations

import sys
import textwrap

import pytest

import metalcall as mc

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is built on Linux's seccomp"),
    pytest.mark.skipif("cpu" not in mc.backends(), reason="the cpu backend is not built in"),
]

# The control page's layout (cpp/src/backends/cpu/sandbox/sandbox_protocol.hpp): request_seq at 0,
# reply_seq at 64, reply_bytes at 68, the reply area at 128 + 256 KiB. A reply is status (u32),
# seconds (f64), message length (u32).
FAKE_WORKER = textwrap.dedent("""\
    #!{python}
    import mmap, os, signal, struct, time
    page = mmap.mmap(4, os.fstat(4).st_size)  # the control page's descriptor (kControlFd)
    seen, answered = 0, 0
    while True:
        seq = struct.unpack_from("<I", page, 0)[0]
        if seq == seen:
            time.sleep(0.001)
            continue
        seen = seq
        if answered >= {answers}:
            with open({silent!r}, "w") as note:  # tells the test that a request now waits for ever
                note.write(f"request {{seq}} unanswered at {{time.monotonic():.2f}}\\n")
            if {interrupt}:
                # Ctrl-C 1 s into the wait, from this process: the caller's own threads need its GIL
                time.sleep(1.0)
                os.kill(os.getppid(), signal.SIGINT)
                with open({silent!r}, "a") as note:
                    note.write(f"SIGINT sent to {{os.getppid()}} at {{time.monotonic():.2f}}\\n")
            time.sleep(3600)  # taken over: never answers again
        struct.pack_into("<IdI", page, 128 + 256 * 1024, 0, 0.0, 0)
        struct.pack_into("<I", page, 68, 16)
        struct.pack_into("<I", page, 64, seen)
        answered += 1
    """)

SRC = "kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) { a[i] = a[i] * 2.0f + 1.0f; }"


@pytest.fixture
def fake_worker(tmp_path):
    def make(answers: int, interrupt: bool = False) -> str:
        path = tmp_path / f"worker-{answers}"
        path.write_text(FAKE_WORKER.format(python=sys.executable, answers=answers, interrupt=interrupt,
                                           silent=str(tmp_path / f"silent-{answers}")))
        path.chmod(0o755)
        return str(path)

    return make


def test_a_worker_silent_from_the_start_fails_device_open(run_python, fake_worker):
    code = textwrap.dedent("""
        import time, metalcall as mc
        start = time.monotonic()
        try:
            mc.Device("cpu", sandbox=True)
            print("opened")
        except mc.DeviceError as e:
            print("DeviceError:", e)
        print(round(time.monotonic() - start))
    """)
    r = run_python(code, env={"METALCALL_SANDBOX_WORKER": fake_worker(0), "METALCALL_SANDBOX_REPLY_TIMEOUT": "2"},
                   timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    message, seconds = r.stdout.splitlines()
    assert message == ("DeviceError: [cpu sandbox] the worker process did not answer within 2 s (a kernel that took "
                       "its process over, or a machine far too busy: METALCALL_SANDBOX_REPLY_TIMEOUT) and was ended")
    assert 2 <= int(seconds) < 20


LOAD_SCRIPT = textwrap.dedent("""
    import os, time
    import numpy as np, metalcall as mc
    fake = os.environ["METALCALL_SANDBOX_WORKER"]
    dev = mc.Device("cpu", sandbox=True)  # the stand-in answers this one request
    kept = dev.asarray(np.arange(4, dtype=np.float32))
    # For the Ctrl-C case the stand-in sends it 1 s into the silent load (not while the compiler
    # runs: a loaded machine compiles slowly).
    start = time.monotonic()
    try:
        dev.compile(SRC).k(4, np.zeros(4, np.float32))
        print("ran")
    except KeyboardInterrupt:
        print("KeyboardInterrupt")
    except mc.ExecutionError as e:
        print("ExecutionError:", e)
    print(round(time.monotonic() - start, 1))
    # The real worker takes the next call, on the same device and its Buffers.
    del os.environ["METALCALL_SANDBOX_WORKER"]
    a = np.arange(4, dtype=np.float32)
    dev.compile(SRC).k(4, a)
    dev.compile(SRC).k(4, kept)
    print(a.tolist(), np.asarray(kept).tolist())
""")


@pytest.mark.parametrize("how", ["timeout", "ctrl-c"])
def test_a_worker_silent_while_loading_a_kernel_is_ended(run_python, fake_worker, tmp_path, how):
    limit = "2" if how == "timeout" else "60"  # Ctrl-C comes after 1 s, long before a 60 s limit
    script = LOAD_SCRIPT.replace("SRC", repr(SRC)).replace("MODE", repr(how))
    worker = fake_worker(1, interrupt=how == "ctrl-c")
    r = run_python(script, timeout=120, env={"METALCALL_SANDBOX_WORKER": worker, "METALCALL_SANDBOX_REPLY_TIMEOUT": limit})
    assert r.returncode == 0, r.stdout + r.stderr
    outcome, seconds, values = r.stdout.splitlines()
    if how == "timeout":
        assert outcome == ("ExecutionError: [cpu sandbox] the worker did not answer within 2 s (a kernel that took its "
                           "process over, or a machine far too busy: METALCALL_SANDBOX_REPLY_TIMEOUT) and was ended "
                           "while loading kernel 'k'; a new worker takes the next call"), r.stdout
        assert 2 <= float(seconds) < 30, r.stdout
    else:
        notes = (tmp_path / "silent-1").read_text() if (tmp_path / "silent-1").exists() else "no silent request"
        assert outcome == "KeyboardInterrupt", r.stdout + notes
        # the compile, the Ctrl-C 1 s into the silent load, the stop grace (200 ms): well under the 60 s limit
        assert 1 <= float(seconds) < 50, r.stdout
    assert values == "[1.0, 3.0, 5.0, 7.0] [1.0, 3.0, 5.0, 7.0]", r.stdout


def test_the_reply_timeout_must_be_a_number(run_python):
    code = textwrap.dedent("""
        import metalcall as mc
        try:
            mc.Device("cpu", sandbox=True)
            print("opened")
        except mc.DeviceError as e:
            print("DeviceError:", e)
    """)
    r = run_python(code, env={"METALCALL_SANDBOX_REPLY_TIMEOUT": "soon"}, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == ("DeviceError: [cpu sandbox] METALCALL_SANDBOX_REPLY_TIMEOUT='soon' is not a number of "
                                "seconds (more than 0, at most 1e6)")
