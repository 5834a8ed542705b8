"""A full cache disk never fails a compile (P2.4 item 6): with METALCALL_CACHE_DIR on a full
filesystem (a 1 MiB tmpfs, filled), compiles go on in another folder with room ($TMPDIR,
/dev/shm, /var/tmp) with one metalcall.CacheWarning naming the full folder, and kernels run
with exact values; when no folder can take a file (a file-size limit on the process), the
compile is a DeviceError that names each folder and why, and the process stays usable. The
first test mounts a tmpfs, so it needs root (CI runs as root) and skips otherwise. On CUDA the
macros make the compile run the host preprocessor, which writes the source to a scratch folder."""

from __future__ import annotations

import subprocess
import sys

import pytest

import metalcall as mc

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="tmpfs and RLIMIT_FSIZE: Linux")

CHILD = r'''
import sys, time, warnings
import numpy as np
import metalcall as mc
dev = mc.Device(sys.argv[1])
SRC = """
#define SCALE 3.0f
kernel void scale(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) { a[i] = a[i] * SCALE + NONCE; }
"""
def run(nonce):
    lib = dev.compile(SRC.replace("NONCE", "%d.0f" % nonce))
    a = np.arange(16, dtype=np.float32)
    lib.scale(16, a)
    assert (a == np.arange(16, dtype=np.float32) * 3 + nonce).all(), a
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    run(time.time_ns() % 1000)
    run(time.time_ns() % 1000 + 1000)  # a second compile: no second warning for the same folder
print("ran")
for w in caught:
    print("warning", w.category.__name__, str(w.message).replace("\n", " "))
'''


@pytest.fixture
def full_folder(tmp_path):
    mount = tmp_path / "full"
    mount.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", str(mount)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {r.stderr.strip()}")
    try:
        for area in ("cpu", "cuda", "translations", "compilers"):  # a cache in use before the disk filled
            (mount / area).mkdir(mode=0o700)
        with open(mount / "filler", "wb") as f:
            try:
                f.write(b"\0" * (2 << 20))
                f.flush()
            except OSError:
                pass  # full
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_a_cache_that_cannot_be_made_on_a_full_disk_is_warned_about(cpu_device, run_python, full_folder):
    code = CHILD.replace("sys.argv[1]", repr("cpu"))
    r = run_python(code, env={"METALCALL_CACHE_DIR": str(full_folder / "new")}, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    warned = [line for line in r.stdout.splitlines() if line.startswith("warning")]
    assert warned and all("CacheWarning" in line and "No space left on device" in line for line in warned), r.stdout


def test_compiles_go_on_when_the_cache_disk_is_full(device, run_python, full_folder):
    code = CHILD.replace("sys.argv[1]", repr(f"{device.backend}:{device.index}"))
    r = run_python(code, env={"METALCALL_CACHE_DIR": str(full_folder)}, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert "ran" in lines, r.stdout + r.stderr
    warned = [line for line in lines if line.startswith("warning")]
    if device.backend == "metal-sim":
        # The simulator builds with the CPU backend ([cpu]) and preprocesses for its reflection
        # ([metal-sim], as the Metal backend does): one warning per cache area that had no room.
        assert 1 <= len(warned) <= 2 and len({line.split()[2] for line in warned}) == len(warned), r.stdout
    else:
        assert len(warned) == 1 or (device.backend != "cpu" and not warned), r.stdout
    for line in warned:
        assert line.startswith("warning CacheWarning"), line
        assert str(full_folder) in line and "No space left on device" in line, line


LIMITED = r'''
import resource, signal, sys
import numpy as np
import metalcall as mc
dev = mc.Device(sys.argv[1])
ready = dev.compile("kernel void add(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) { a[i] += 1.0f; }")
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) instead
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
try:
    dev.compile("#define N 2\nkernel void twice(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) { a[i] *= N; }")
    print("compiled")
except mc.DeviceError as e:
    print("error", str(e).replace("\n", " "))
a = np.zeros(4, np.float32)
ready.add(4, a)
assert (a == 1).all()
print("usable")
'''


def test_a_clear_error_when_no_folder_can_take_a_file(device, run_python, tmp_path):
    code = LIMITED.replace("sys.argv[1]", repr(f"{device.backend}:{device.index}"))
    r = run_python(code, env={"METALCALL_CACHE_DIR": str(tmp_path / "cache")}, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "usable" in r.stdout.splitlines(), r.stdout
    if device.backend not in ("cpu", "metal-sim"):  # the simulator builds with the CPU backend
        # NVRTC builds in memory: the only files over the limit are cache entries, whose failed
        # writes are warnings (test_compiles_go_on_when_the_cache_disk_is_full), so it compiles.
        assert "compiled" in r.stdout.splitlines(), r.stdout + r.stderr
        return
    error = [line for line in r.stdout.splitlines() if line.startswith("error")]
    assert error, r.stdout + r.stderr
    assert "no folder has room for a build's files" in error[0], error[0]
    assert "File too large" in error[0] and str(tmp_path / "cache") in error[0], error[0]
    assert "usable" in r.stdout.splitlines(), r.stdout
