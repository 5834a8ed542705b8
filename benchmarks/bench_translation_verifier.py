"""Cost of the translation verifier (METALCALL_VERIFY; docs/security.md) per cold compile.

Times the check a verified cold compile runs (`metalcall._core._verify_cpu_translation_details`)
on a small kernel and on candle's quantized.metal (1.3 MB, 163 kernels, from the public MSL
corpus), parsing the whole unit and reading the precompiled header of its head (the prelude
parsed once); then a whole cold compile of the small kernel in a fresh process: unverified,
verified in an empty cache folder (the header is made), and verified in a cache folder that
holds only the header (a new kernel on a machine that verified before); then, in an empty cache,
a cold compile of four of the conformance suite's kernel sets against their verification. Needs
libclang (`pip install libclang`) and METALCALL_CORPUS.

Usage: METALCALL_CORPUS=/path/to/corpus python benchmarks/bench_translation_verifier.py
"""

from __future__ import annotations

import importlib
import os
import shutil
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
    for precompiled in (False, True):
        # Also loads libclang and makes (or reads) the header before timing.
        assert _core._verify_cpu_translation_details(code, precompiled) == ([], precompiled)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            problems, used = _core._verify_cpu_translation_details(code, precompiled)
            times.append(time.perf_counter() - start)
            assert problems == [] and used == precompiled
        how = "precompiled head" if precompiled else "whole unit"
        print(f"{name}, {how}: verification median {statistics.median(times):.3f} s (n={runs}, {len(code)} bytes of C++)")


def cold_compile(env: dict) -> float:
    out = subprocess.run([sys.executable, "-c", COLD_COMPILE, SMALL], env={**os.environ, **env}, capture_output=True,
                         text=True, check=True)
    return float(out.stdout)


def time_cold_compiles(runs: int = 7) -> None:
    # Interleaved, round by round, so that a busy machine slows each kind alike.
    kinds = {"METALCALL_VERIFY=0, empty cache": ("0", False), "METALCALL_VERIFY=1, empty cache": ("1", False),
             "METALCALL_VERIFY=1, header in the cache": ("1", True)}
    times: dict[str, list[float]] = {name: [] for name in kinds}
    with tempfile.TemporaryDirectory() as primed:
        cold_compile({"METALCALL_VERIFY": "1", "METALCALL_CACHE_DIR": primed})  # a folder that holds the header
        for _ in range(runs):
            for name, (verify, with_header) in kinds.items():
                with tempfile.TemporaryDirectory() as cache:
                    if with_header:
                        shutil.copytree(os.path.join(primed, "verify"), os.path.join(cache, "verify"))
                    times[name].append(cold_compile({"METALCALL_VERIFY": verify, "METALCALL_CACHE_DIR": cache}))
    for name, t in times.items():
        print(f"cold compile of the small kernel, {name}: median {statistics.median(t):.3f} s (n={runs})")


def time_kernel_sets() -> None:
    """Verification against a cold compile of the conformance suite's kernel sets (tests/conformance)."""
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "conformance")
    sys.path[:0] = [folder, os.path.dirname(folder)]
    import mcconf  # the conformance suite's KernelSet
    import metalcall as mc

    device = mc.Device("cpu")
    for module, name in [("test_language", "FC"), ("test_math", "KS"), ("test_language", "KS"), ("test_vectors", "KS")]:
        kernels = getattr(importlib.import_module(module), name)
        assert isinstance(kernels, mcconf.KernelSet)
        source = kernels.source()
        code = _core._cpu_translation(source)
        start = time.perf_counter()
        device.compile(source, fast_math=kernels.fast_math, defines=kernels.defines)  # unverified, cold
        compile_s = time.perf_counter() - start
        start = time.perf_counter()
        assert _core._verify_cpu_translation_details(code) == ([], True)
        verify_s = time.perf_counter() - start
        print(f"{module}.{name} ({len(code)} bytes of C++): cold compile {compile_s:.2f} s, verification with the "
              f"header {verify_s:.2f} s ({100 * verify_s / compile_s:.0f}%)")


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
    time_cold_compiles()
    with tempfile.TemporaryDirectory() as cache:
        os.environ["METALCALL_CACHE_DIR"], os.environ["METALCALL_VERIFY"] = cache, "0"
        time_kernel_sets()


if __name__ == "__main__":
    main()
