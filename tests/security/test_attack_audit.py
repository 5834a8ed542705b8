"""Attacks found by the security audit of 2026-12-05 (docs/security.md).

Cache keys an attacker collides. Every cache of a compile (the device's libraries in memory, the
disk cache's translations and kernel objects) is named by a hash of what it is for. Before
2026-12-05 that hash was a fast XXH3-style one whose key table is public: a 64-bit word whose low
half equals the key word of its stripe and lane adds nothing but itself to the lanes, so two such
words of one 1 KiB block can trade their high halves (+d and -d) without changing the hash. Two
sources that differ in two bytes of their comments then had one key, and the second compiled was
served the first one's kernels: here one byte turns the rest of a `//` line into code. A source
run on the sandboxed device (the untrusted path) made an in-process device run its kernel for
another source, through the disk cache. Keys are SHA-256 since.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

import metalcall as mc
from attack_kernels import MODES, mode  # noqa: F401 (mode: the fixture)

pytestmark = pytest.mark.skipif("cpu" not in mc.backends(), reason="the cpu backend is not built in")


def colliding_sources() -> tuple[str, str]:
    """(quiet, loud): `out[i] = 1` and, in loud only, `out[i] = 2` too. They differ in two bytes:
    byte 4 of the word at offset 744 (stripe 11, lane 5: key word 16, low half b"U\\x12Ru") is a
    space in quiet and a line end in loud, and byte 4 of the word at offset 1000 (stripe 15,
    lane 5: key word 20, low half b"\\xd7\\x9e\\x0b\\x10") makes up the difference (0x20 - 0x0a ==
    0x77 - 0x61)."""

    def build(loud: bool) -> bytes:
        s = ("#include <metal_stdlib>\nusing namespace metal;\n"
             "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
             "  out[i] = 1.0f;\n")
        s = (s + "//" + "-" * (744 - len(s) - 2)).encode()
        s += b"U\x12Ru" + (b"\n" if loud else b" ") + b"   " + b"out[i] = 2.0f;\n"
        s += b"//" + b"-" * (1000 - len(s) - 2)
        s += b"\xd7\x9e\x0b\x10" + (b"w" if loud else b"a") + b"   \n" + b"// end\n" * 12 + b"}\n"
        return s

    quiet, loud = build(False), build(True)
    assert len(quiet) == len(loud) > 1024 and sum(a != b for a, b in zip(quiet, loud)) == 2
    return quiet.decode(), loud.decode()


def run(dev: mc.Device, source: str) -> list:
    out = np.zeros(4, np.float32)
    dev.compile(source).k(4, out)
    return out.tolist()


def test_colliding_sources_get_their_own_kernels_on_one_device(mode):
    quiet, loud = colliding_sources()
    dev = MODES[mode]()
    assert run(dev, loud) == [2.0] * 4
    assert run(dev, quiet) == [1.0] * 4  # was [2.0] * 4: the library of `loud`
    assert run(dev, loud) == [2.0] * 4


def test_a_sandboxed_source_does_not_choose_what_an_in_process_device_runs(run_python, tmp_path):
    # The untrusted source is compiled for the sandbox first; then the trusted one in-process, in a
    # new process (nothing in memory) with the same disk cache.
    if not sys.platform.startswith("linux"):
        pytest.skip("the sandbox is built on Linux's seccomp")
    quiet, loud = colliding_sources()
    code = (
        "import json, numpy as np, metalcall as mc\n"
        "source, sandbox = json.loads(open('job.json').read())\n"
        "out = np.zeros(4, np.float32)\n"
        "mc.Device('cpu', sandbox=sandbox).compile(source).k(4, out)\n"
        "print(json.dumps(out.tolist()))\n")
    env = {"METALCALL_CACHE_DIR": str(tmp_path / "cache")}
    results = []
    for source, sandbox in ((loud, True), (quiet, False)):
        (tmp_path / "job.json").write_text(json.dumps([source, sandbox]))
        p = run_python(code, env=env)
        assert p.returncode == 0, p.stderr
        results.append(json.loads(p.stdout.strip().splitlines()[-1]))
    assert results == [[2.0] * 4, [1.0] * 4]  # the in-process device ran `loud`'s kernel before


# A front-end hang. The front end runs in the caller's process (on the sandboxed device too) with
# no time limit of its own; it read each directive's column from its physical line, and finding
# a physical line scanned the whole source: time quadratic in the number of directives. 40,000
# `#define`s (0.8 MB) took 175 s, so 200,000 (4.4 MB, well under the 16 MiB source limit) took
# over an hour, before 2026-12-05; about a second since.
DIRECTIVES = 200_000


def test_a_source_of_many_directives_compiles_in_linear_time(run_python):
    code = (
        "import time, numpy as np, metalcall as mc\n"
        f"n = {DIRECTIVES}\n"
        "src = ('#include <metal_stdlib>\\nusing namespace metal;\\n' + ''.join(f'#define A{j} {j}\\n' for j in range(n))\n"
        "       + 'kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = A7; }\\n')\n"
        "t = time.monotonic()\n"
        "out = np.zeros(4, np.float32)\n"
        "mc.Device('cpu', sandbox=False).compile(src).k(4, out)\n"
        "print(out.tolist(), time.monotonic() - t)\n")
    p = run_python(code, timeout=240)  # a TimeoutExpired is the failure
    assert p.returncode == 0, p.stderr
    assert p.stdout.split("]")[0] == "[7.0, 7.0, 7.0, 7.0", p.stdout
