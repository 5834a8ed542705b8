"""Attack: learning about host files through the preprocessor (security, issue P2.4).

The preprocessor runs on the caller's machine, in every device mode (the sandbox compiles in the
calling process too), so a source must not learn anything about the host's files from it. Since
clang 19 (and GCC 15) `__has_embed("file")` answers whether a file exists (1), is empty (2) or is
missing (0), and its `limit(n)` / `clang::offset(n)` parameters measure its length: metalcall
answered `__has_include` from the MSL headers but left `__has_embed` to the compiler, so with a
recent clang (a system clang++-19 or later, or zig's, `metalcall[zig]`) a kernel could probe the
file system. Each probe here is compiled against a file that exists with content, one that exists
empty and one that does not exist; the outcome (the kernel's value or the error) must be the same
for all three, on every device mode, with the default compiler and with zig's clang when installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import metalcall as mc
from metalcall import _zig

pytestmark = pytest.mark.skipif("cpu" not in mc.backends(), reason="the cpu backend is not built in")

KERNEL = "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = VALUE; }\n"

# name: the lines before KERNEL; FILE is the probed path. Each sets VALUE from what it learnt.
PROBES = {
    "has_embed": '#if __has_embed("FILE")\n#define VALUE 1.0f\n#else\n#define VALUE 3.0f\n#endif\n',
    "has_embed_found": '#if __has_embed("FILE") == 1\n#define VALUE 1.0f\n#elif __has_embed("FILE") == 2\n'
                       '#define VALUE 2.0f\n#else\n#define VALUE 3.0f\n#endif\n',
    "has_embed_macro_name": '#define F "FILE"\n#if __has_embed(F)\n#define VALUE 1.0f\n#else\n#define VALUE 3.0f\n#endif\n',
    "has_embed_limit": '#if __has_embed("FILE" limit(1)) == 1\n#define VALUE 1.0f\n#else\n#define VALUE 3.0f\n#endif\n',
    "has_embed_offset": '#if __has_embed("FILE" clang::offset(8)) == 1\n#define VALUE 1.0f\n#else\n#define VALUE 3.0f\n#endif\n',
    "has_embed_undefined": '#undef __has_embed\n#if __has_embed("FILE")\n#define VALUE 1.0f\n#else\n#define VALUE 3.0f\n#endif\n',
    "has_include": '#if __has_include("FILE")\n#define VALUE 1.0f\n#else\n#define VALUE 3.0f\n#endif\n',
    "has_include_macro_name": '#define F "FILE"\n#if __has_include(F)\n#define VALUE 1.0f\n#else\n#define VALUE 3.0f\n#endif\n',
    "has_include_undefined": '#undef __has_include\n#define F "FILE"\n#if __has_include(F)\n#define VALUE 1.0f\n'
                             '#else\n#define VALUE 3.0f\n#endif\n',
    "has_include_next": '#if __has_include_next("FILE")\n#define VALUE 1.0f\n#else\n#define VALUE 3.0f\n#endif\n',
}

CHILD = textwrap.dedent(
    r"""
    import json, sys, numpy as np, metalcall as mc
    probes, files = json.loads(sys.argv[1]), json.loads(sys.argv[2])
    devices = {"cpu": mc.Device("cpu", sandbox=False), "checked": mc.Device("cpu", checked=True, sandbox=False),
               "sandbox": mc.Device("cpu", sandbox=True)}
    out = {}
    for mode, dev in devices.items():
        for name, text in probes.items():
            seen = []
            for path in files:
                src = "#include <metal_stdlib>\nusing namespace metal;\n" + text.replace("FILE", path) + KERNEL
                a = np.zeros(4, np.float32)
                try:
                    dev.compile(src).k(4, a)
                    seen.append(a.tolist())
                except mc.CompileError as e:
                    seen.append("CompileError " + str(e).splitlines()[0].replace(path, "FILE"))
            out[f"{mode}/{name}"] = seen
    print(json.dumps(out))
    """
)


def compilers():
    yield pytest.param({}, id="default")
    yield pytest.param({"METALCALL_CXX": "zig"}, id="zig", marks=pytest.mark.skipif(
        _zig.zig_binary() is None, reason="the ziglang package is not installed (its clang has __has_embed)"))


@pytest.mark.parametrize("compiler", list(compilers()))
def test_the_preprocessor_tells_nothing_about_host_files(tmp_path, compiler):
    full = tmp_path / "full.h"
    full.write_text("#define VALUE 99.0f\n" + "x" * 64 + "\n")
    empty = tmp_path / "empty.h"
    empty.write_text("")
    files = [str(full), str(empty), str(tmp_path / "missing.h")]
    env = {**os.environ, "METALCALL_CACHE_DIR": str(tmp_path / "cache"), **compiler}
    proc = subprocess.run([sys.executable, "-c", CHILD.replace("KERNEL", repr(KERNEL)), json.dumps(PROBES), json.dumps(files)],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    outcomes = json.loads(proc.stdout)
    assert len(outcomes) == 3 * len(PROBES)
    for key, seen in outcomes.items():
        assert seen[0] == seen[1] == seen[2], (key, seen)  # nothing learnt about the file
        # Nothing is found: the probes that compile take their "no" branch.
        assert seen[0] == [3.0] * 4 or seen[0].startswith("CompileError "), (key, seen)
    for mode in ("cpu", "checked", "sandbox"):
        for name in ("has_embed", "has_embed_found", "has_embed_macro_name", "has_embed_limit", "has_embed_offset",
                     "has_include", "has_include_next"):
            assert outcomes[f"{mode}/{name}"][0] == [3.0] * 4, (mode, name, outcomes[f"{mode}/{name}"])
        assert "__has_include of a header name that macros make is not supported" in outcomes[f"{mode}/has_include_macro_name"][0]
