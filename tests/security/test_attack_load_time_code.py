"""Attack: code of the kernel's that runs when its object is loaded (security, issue P2.4).

The kernel object check (docs/security.md) is the wall behind the front end: a kernel object may
run nothing when it is loaded or unloaded. Static initialisers, finalisers and functions in the
.init/.fini sections were refused; an indirect function (`__attribute__((ifunc))`) was not, and
the loader calls an ifunc's resolver while it relocates the object, inside `dlopen`, in the
calling process on the in-process devices. The test plays a front end with a hole: METALCALL_CXX
is a wrapper that appends the attack to the translated C++ before the real compiler builds it,
and the resolver makes a raw `openat` system call that creates a marker file, so running it is
seen whatever the device. Each attack is refused with a CompileError before anything is loaded,
on every device mode (in-process, checked and sandboxed: the object is checked where it is built,
in the calling process), the marker is never made, and the same kernel without the addition runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(sys.platform != "linux" or os.uname().machine != "x86_64",
                                reason="ELF kernel objects; the resolver's raw system call is x86-64's")

# The resolver creates MARKER with a raw openat(AT_FDCWD, MARKER, O_WRONLY | O_CREAT): it imports
# nothing, so only the object's code running at load time can make the marker.
RESOLVER = r"""
static void metalcall_test_impl() {}
extern "C" void* metalcall_test_resolver() {
  long r;
  asm volatile("syscall" : "=a"(r) : "a"(257L), "D"(-100L), "S"(MARKER), "d"(0101L) : "rcx", "r11", "memory");
  return (void*)metalcall_test_impl;
}
"""

ADDITIONS = {
    "none": "",
    # An exported ifunc that the object's own data points at: the loader binds it at load.
    "ifunc-referenced": RESOLVER + textwrap.dedent("""
        extern "C" void metalcall_test_ifunc() __attribute__((ifunc("metalcall_test_resolver")));
        void* volatile metalcall_test_ref = (void*)metalcall_test_ifunc;
    """),
    # A hidden one: no dynamic symbol, only an IRELATIVE relocation.
    "ifunc-hidden": RESOLVER + textwrap.dedent("""
        extern "C" __attribute__((visibility("hidden"))) void metalcall_test_ifunc()
            __attribute__((ifunc("metalcall_test_resolver")));
        void* volatile metalcall_test_ref = (void*)metalcall_test_ifunc;
    """),
    # Exported and never referenced: a symbol lookup by name would run the resolver.
    "ifunc-exported": RESOLVER + textwrap.dedent("""
        extern "C" __attribute__((visibility("default"))) void metalcall_test_ifunc()
            __attribute__((ifunc("metalcall_test_resolver")));
    """),
}

CHILD = textwrap.dedent(
    r"""
    import os, sys, numpy as np, metalcall as mc
    mode, names = sys.argv[1], sys.argv[2:]
    dev = {"cpu": lambda: mc.Device("cpu", sandbox=False),
           "checked": lambda: mc.Device("cpu", checked=True, sandbox=False),
           "sandbox": lambda: mc.Device("cpu", sandbox=True)}[mode]()
    for n, name in enumerate(names):
        os.environ["METALCALL_TEST_ADDITION"] = name  # read by the wrapper at each build
        src = "kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) "
        src += "{ a[i] = %d.0f * a[i]; }\n" % (n + 2)  # a source of its own: a build, not a cache hit
        try:
            a = np.arange(4, dtype=np.float32)
            dev.compile(src).k(4, a)
            print("ran", (a / (n + 2)).tolist())
        except mc.CompileError as e:
            print("refused", str(e).splitlines()[0])
    """
)


def real_compiler() -> str:
    for name in ("clang++", "g++"):
        if shutil.which(name):
            return shutil.which(name)
    pytest.skip("no C++ compiler on this machine")


@pytest.mark.parametrize("mode", ["cpu", "checked", "sandbox"])
def test_an_ifunc_resolver_never_runs(tmp_path, mode):
    marker = tmp_path / "resolver-ran"
    names = sorted(ADDITIONS)
    for name in names:
        text = ADDITIONS[name]
        (tmp_path / name).write_text(f'#define MARKER "{marker}"\n{text}\n' if text else "")
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
    proc = subprocess.run([sys.executable, "-c", CHILD, mode, *names], capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = dict(zip(names, proc.stdout.splitlines()))
    assert lines["none"] == "ran [0.0, 1.0, 2.0, 3.0]", proc.stdout
    assert lines["ifunc-hidden"].startswith(
        "refused [cpu] the compiled kernel has an indirect function (an IRELATIVE relocation) (code that would run "
        "when it is loaded): refused before loading"), proc.stdout
    for name in ("ifunc-referenced", "ifunc-exported"):
        assert lines[name].startswith("refused [cpu] the compiled kernel has an indirect function"), (name, proc.stdout)
        assert "(code that would run when it is loaded): refused before loading" in lines[name], proc.stdout
    assert "metalcall_test_ifunc" in lines["ifunc-exported"], proc.stdout
    assert not marker.exists()
