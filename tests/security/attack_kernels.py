"""What the source-attack files share: the kernel every attack body goes into, the CPU device's
three modes (in-process, checked, sandboxed) each attack runs on, and the checked-pointer files'
kernels and checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import metalcall as mc

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"


def kernel(body: str, prefix: str = "") -> str:
    return (HEADER + prefix + "\nkernel void k(device float* out [[buffer(0)]], constant ulong& at [[buffer(1)]],\n"
            "              uint i [[thread_position_in_grid]]) {\n" + body + "\n}\n")


MODES = {
    "cpu": lambda: mc.Device("cpu", sandbox=False),
    "checked": lambda: mc.Device("cpu", checked=True, sandbox=False),
    "sandbox": lambda: mc.Device("cpu", sandbox=True),
}


@pytest.fixture(params=sorted(MODES))
def mode(request):
    if request.param == "sandbox" and not sys.platform.startswith("linux"):
        pytest.skip("the sandbox is built on Linux's seccomp")
    return request.param


# The checked-pointer attack files (test_attack_checked_*): kernels that write through a pointer at
# `far` (0 when `at` is 0, else thousands of elements away), on the checked device's two modes and
# the plain one, each file's kernels compiled once per mode into one library.
CHECKED_SIGNATURE = ("(device float* out [[buffer(0)]], constant ulong& at [[buffer(1)]], "
                     "uint i [[thread_position_in_grid]])")
FAR = "ulong far = at == 0 ? 0 : at % 1024 + 4096;"
CHECKED_MODES = {
    "checked": lambda: mc.Device("cpu", checked=True, sandbox=False),
    "checked-sandbox": lambda: mc.Device("cpu", checked=True, sandbox=True),
}
CHECKED_AND_PLAIN = dict(CHECKED_MODES, cpu=lambda: mc.Device("cpu", sandbox=False))


def checked_kernel(prefix: str, body: str, name: str = "k") -> str:
    """A kernel `name` (without the header) with `far` defined before body."""
    return prefix + f"\nkernel void {name}{CHECKED_SIGNATURE} {{\n  {FAR}\n  {body}\n}}\n"


def open_mode(mode: str) -> mc.Device:
    if mode == "checked-sandbox" and not sys.platform.startswith("linux"):
        pytest.skip("the sandbox is built on Linux's seccomp")
    return CHECKED_AND_PLAIN[mode]()


class KernelLibraries:
    """One library per mode of the kernels {name: (prefix, body, ...)}, each named as its key
    with '-' made '_', compiled at the first use."""

    def __init__(self, cases: dict):
        self.cases = cases
        self.libraries = {}

    def get(self, mode: str):
        if mode not in self.libraries:
            dev = open_mode(mode)
            kernels = "".join(checked_kernel(c[0], c[1], n.replace("-", "_")) for n, c in sorted(self.cases.items()))
            self.libraries[mode] = dev, dev.compile(HEADER + kernels)
        return self.libraries[mode]

    def assert_checked(self, mode: str, name: str, what: str = "") -> None:
        """assert_checked_write of kernel `name` on `mode`, in bounds giving its case's last item."""
        dev, lib = self.get(mode)
        assert_checked_write(dev, lib, name, what, self.cases[name][-1])

    def assert_all_in_bounds(self, mode: str) -> None:
        """Every kernel run in bounds on `mode` gives its case's last item (`out` after far = 0)."""
        _, lib = self.get(mode)
        for name, case in sorted(self.cases.items()):
            assert_in_bounds(lib, name, case[-1])


def assert_checked_write(dev: mc.Device, lib, name: str, what: str, expected: list) -> None:
    """Kernel `name` run with `at` a victim Buffer's address: an ExecutionError naming `what` and the
    bounds, the victim untouched; then in bounds (`at` 0), `out` becomes `expected`."""
    kernel = getattr(lib, name.replace("-", "_"))
    victim = dev.asarray(np.full(4, 7.0, np.float32))
    out = np.array([1, 2, 3, 4], np.float32)
    with pytest.raises(mc.ExecutionError) as info:
        kernel(1, out, np.uint64(np.asarray(victim).ctypes.data))
    message = str(info.value)
    assert f"kernel '{name.replace('-', '_')}' {what}" in message and "out of bounds" in message, message
    assert "the access was not performed" in message, message
    assert np.asarray(victim).tolist() == [7.0] * 4
    assert_in_bounds(lib, name, expected)  # the device goes on


def assert_in_bounds(lib, name: str, expected: list) -> None:
    out = np.array([1, 2, 3, 4], np.float32)
    getattr(lib, name.replace("-", "_"))(1, out, np.uint64(0))
    assert out.tolist() == expected, name


def assert_checked_in_process(test_file: str, names: str, what: str) -> None:
    """LIBRARIES.assert_checked("checked", name, what(name)) of module `test_file` for each name of its
    list `names`, on Device("cpu", checked=True, sandbox=False) in a subprocess (an unchecked write
    there would corrupt this process): each must raise ExecutionError naming what faulted, leave the
    victim untouched, and the device go on. `what` names the module's function of a case's name."""
    here = os.path.dirname(os.path.abspath(test_file))
    module = os.path.splitext(os.path.basename(test_file))[0]
    script = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
        sys.path.insert(0, {here!r})
        import {module} as g
        results = {{}}
        for name in g.{names}:
            try:
                g.LIBRARIES.assert_checked("checked", name, g.{what}(name))
                results[name] = "ok"
            except BaseException as e:
                results[name] = type(e).__name__ + ": " + str(e)[:400]
        print(json.dumps(results))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    failed = {k: v for k, v in results.items() if v != "ok"}
    assert not failed and results, failed
