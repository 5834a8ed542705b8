"""Cost of the translation verifier (METALCALL_VERIFY=1; docs/security.md) per cold compile.

Times `metalcall._core._verify_cpu_translation` (the check a verified cold compile runs) on a
small kernel and on candle's quantized.metal (1.3 MB, 163 kernels, from the public MSL corpus),
then a whole cold compile of the small kernel with and without METALCALL_VERIFY, each in a
fresh process and cache folder. Needs libclang (`pip install libclang`) and METALCALL_CORPUS.

Usage: METALCALL_CORPUS=/path/to/corpus python benchmarks/bench_translation_verifier.py
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

from metalcall import _core

SMALL = """
#include <metal_stdlib>
using namespace metal;
float helper(float x) { return x + 1.0f; }
struct Acc { float v; Acc operator+(Acc o) const { return Acc{v + o.v}; } };
kernel void plain(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  Acc a{x[i]}; Acc b{helper(x[i])}; x[i] = (a + b).v;
}
"""
LARGE = "candle/candle-metal-kernels/src/metal_src/quantized.metal"

COLD_COMPILE = ("import sys, time, metalcall as mc\nd = mc.Device('cpu')\nt = time.perf_counter()\n"
                "d.compile(sys.argv[1])\nprint(time.perf_counter() - t)\n")


def time_verify(name: str, source: str, runs: int) -> None:
    code = _core._cpu_translation(source)
    assert _core._verify_cpu_translation(code) == []  # also loads libclang before timing
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        problems = _core._verify_cpu_translation(code)
        times.append(time.perf_counter() - start)
        assert problems == []
    print(f"{name}: verification median {statistics.median(times):.3f} s (n={runs}, {len(code)} bytes of C++)")


def time_cold_compiles(verify: str, runs: int = 3) -> None:
    times = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "METALCALL_VERIFY": verify, "METALCALL_CACHE_DIR": cache}
            out = subprocess.run([sys.executable, "-c", COLD_COMPILE, SMALL], env=env, capture_output=True,
                                 text=True, check=True)
            times.append(float(out.stdout))
    print(f"cold compile of the small kernel, METALCALL_VERIFY={verify}: median {statistics.median(times):.3f} s (n={runs})")


def main() -> None:
    found, library = _core._translation_verifier_library()
    if not found:
        sys.exit(library)
    print("libclang:", library)
    time_verify("small kernel", SMALL, 7)
    corpus = os.environ.get("METALCALL_CORPUS")
    if corpus:
        with open(os.path.join(corpus, LARGE), encoding="utf-8", errors="replace") as f:
            time_verify("quantized.metal (163 kernels)", f.read(), 3)
    time_cold_compiles("0")
    time_cold_compiles("1")


if __name__ == "__main__":
    main()
