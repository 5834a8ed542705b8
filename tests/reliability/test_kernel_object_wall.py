"""The kernel object check is a second wall behind the front end (issue P2.4, the probes' item
4): a kernel object must hold no code that runs when it is loaded or unloaded. Here the wall
is tested as if the front end had a hole: METALCALL_CXX is a wrapper around the real compiler
that appends such code to the translated C++ before it is built. Before, a destructor
function (`.fini_array`) and functions placed in the `.init`/`.fini` sections passed the
check, and the first would have run at process exit; now each is a CompileError, and the
same kernel without the addition builds and runs. (The check is the same for the checked
device: it reads the built object, whatever the translation.)"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent(
    r"""
    import os, sys, numpy as np, metalcall as mc
    for n, addition in enumerate(sys.argv[1:]):
        os.environ["METALCALL_TEST_ADDITION"] = addition  # read by the wrapper at each build
        # A source of its own per addition: each is a build, not a cache hit.
        src = "kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) "
        src += "{ a[i] = %d.0f * a[i]; }\n" % (n + 2)
        try:
            a = np.arange(4, dtype=np.float32)
            mc.Device("cpu").compile(src).k(4, a)
            print("ran", (a / (n + 2)).tolist())
        except mc.CompileError as e:
            print("refused", str(e).splitlines()[0])
    """
)

ADDITIONS = {
    "none": "",
    "destructor": "__attribute__((destructor)) static void metalcall_test_late() { metalcall_test_sink = 1; }",
    "init-section": '__attribute__((section(".init"))) void metalcall_test_early() { metalcall_test_sink = 2; }',
    "fini-section": '__attribute__((section(".fini"))) void metalcall_test_late() { metalcall_test_sink = 3; }',
    "constructor": "__attribute__((constructor)) static void metalcall_test_early() { metalcall_test_sink = 4; }",
}
EXPECTED = {
    "none": "ran [0.0, 1.0, 2.0, 3.0]",
    "destructor": "refused [cpu] the compiled kernel has a static finaliser (.fini_array)",
    "init-section": "refused [cpu] the compiled kernel has a function in the .init section",
    "fini-section": "refused [cpu] the compiled kernel has a function in the .fini section",
    "constructor": "refused [cpu] the compiled kernel has a static initialiser",
}


def real_compiler() -> str:
    for name in ("clang++", "clang++-16", "clang++-17", "clang++-18", "g++"):
        if shutil.which(name):
            return shutil.which(name)
    pytest.skip("no C++ compiler on this machine")


@pytest.mark.skipif(sys.platform != "linux", reason="ELF kernel objects (the Mach-O reader is tested in cpp/tests)")
def test_code_run_at_load_or_unload_is_refused(tmp_path):
    names = sorted(ADDITIONS)
    for name in names:
        text = ADDITIONS[name]
        (tmp_path / name).write_text(("volatile int metalcall_test_sink; " + text + "\n") if text else "")
    wrapper = tmp_path / "cxx"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'extra="{tmp_path}/$METALCALL_TEST_ADDITION"\n'
        'for a in "$@"; do case "$a" in *.cpp) [ -f "$extra" ] && cat "$extra" >> "$a";; esac; done\n'
        f'exec "{real_compiler()}" "$@"\n'
    )
    wrapper.chmod(0o755)
    env = {**os.environ, "METALCALL_CXX": str(wrapper), "METALCALL_CACHE_DIR": str(tmp_path / "cache"),
           "METALCALL_TEST_ADDITION": "none"}
    proc = subprocess.run([sys.executable, "-c", CHILD, *names], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert len(lines) == len(names), proc.stdout
    for name, line in zip(names, lines):
        assert line.startswith(EXPECTED[name]), (name, line)
