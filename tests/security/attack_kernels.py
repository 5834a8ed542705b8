"""What the source-attack files share: the kernel every attack body goes into, and the CPU
device's three modes (in-process, checked, sandboxed) each attack runs on."""

from __future__ import annotations

import sys

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
