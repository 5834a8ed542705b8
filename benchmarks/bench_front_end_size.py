"""How the MSL front end's time grows with a flat source's length (issue P2.4): N helper
functions, N calls in one kernel, N kernels, N loops in one kernel, N statements. Only the front
end is timed: the C++ compiler is a stand-in that fails a translation at once (METALCALL_CXX), so
each compile ends in a CompileError right after the front end.

    python benchmarks/bench_front_end_size.py [N ...]      (default: 4000 16000)

Prints one line per shape and N: the source's size and the seconds the compile took. A linear
front end takes about 4x as long for 4x the N."""

from __future__ import annotations

import os
import stat
import sys
import tempfile
import time

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"


def kernel(body: str) -> str:
    return "kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n" + body + "}\n"


def shapes(n: int) -> dict[str, str]:
    return {
        "functions": HEADER + "".join(f"float f{k}(float x) {{ return x * {k}.0f + 1.0f; }}\n" for k in range(n))
        + kernel("a[i] = f0(a[i]);\n"),
        "calls": HEADER + "float f(float x) { return x + 1.0f; }\n" + kernel("    a[i] = f(a[i]);\n" * n),
        "kernels": HEADER + "".join(f"kernel void k{k}(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]])"
                                    f" {{ a[i] = {k}.0f; }}\n" for k in range(n)),
        "loops": HEADER + kernel("".join(f"    for (int j = 0; j < {k % 7}; ++j) a[i] += 1.0f;\n" for k in range(n))),
        "statements": HEADER + kernel("".join(f"    a[i] = a[i] * 1.0001f + {k % 97}.0f;\n" for k in range(n))),
    }


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [4000, 16000]
    with tempfile.TemporaryDirectory() as tmp:
        fake = os.path.join(tmp, "cxx")
        with open(fake, "w") as f:  # the system compiler, except that it fails every translation
            f.write('#!/bin/sh\nfor a in "$@"; do case "$a" in *.cpp) exit 1;; esac; done\nexec c++ "$@"\n')
        os.chmod(fake, os.stat(fake).st_mode | stat.S_IXUSR)
        os.environ["METALCALL_CXX"] = fake
        os.environ["METALCALL_CACHE_DIR"] = os.path.join(tmp, "cache")
        import metalcall as mc

        dev = mc.Device("cpu", sandbox=False)
        for n in sizes:
            for name, src in shapes(n).items():
                start = time.perf_counter()
                try:
                    dev.compile(src).k
                except (mc.CompileError, AttributeError):
                    pass
                print(f"{name:10s} N={n:6d} {len(src) / 1e6:6.2f} MB {time.perf_counter() - start:7.2f} s", flush=True)


if __name__ == "__main__":
    main()
