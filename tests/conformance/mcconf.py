"""Helpers of the MSL conformance suite (issue P0.2); fixtures are in conftest.py.

Every test runs a kernel written the way users write MSL and checks its output
against a NumPy reference computed independently of the kernel.

* ``KernelSet``: one MSL source made of a shared preamble plus many kernel snippets.
  It is compiled ONCE per device (one compile for 6-15 kernels). If that compile
  fails, the snippet at the error's line is set aside and the rest is recompiled; each
  snippet set aside is then compiled on its own, so one unsupported construct only
  fails the tests of its own kernel (and the xfail list stays precise).
  ``ks.get(device, "name")`` returns the kernel or re-raises its snippet's own
  compile error.
* ``compile_once(device, src, defines=None, fast_math=True)``: a cached
  ``device.compile`` for sources used as a whole.
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

import metalcall as mc

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"


def _dev_key(dev: mc.Device):
    return (dev.backend, dev.name)


_LIB_CACHE: dict = {}


@functools.cache
def gemm_benchmark():
    """benchmarks/bench_simdgroup_gemm.py as a module (its GEMM_SRC kernel and gemm()), loaded
    once, or a skip where the checkout has no benchmarks."""
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_simdgroup_gemm.py"
    if not path.exists():
        pytest.skip(f"{path} is not in this checkout")
    spec = importlib.util.spec_from_file_location("bench_simdgroup_gemm", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def check_gemm_kernel(device: mc.Device, defines: dict, rng, dtype, k: int = 96, config=None) -> None:
    """Compiles the GEMM benchmark's kernel with `defines` (its default tiling, 64x64 blocks,
    or `config`: SIMD-groups along M and N, 8x8 blocks a SIMD-group along M and N, BK)
    and checks a 128xk by kx192 product of random `dtype` matrices against float64 (C in
    half with C_HALF=1: then to half's precision)."""
    bench = gemm_benchmark()
    config = config or bench.DEFAULT_CONFIG
    tiling = dict(zip(("SG_ROWS", "SG_COLS", "FM", "FN", "BK"), map(str, config)))
    lib = compile_once(device, bench.GEMM_SRC, {**defines, **tiling})
    m, n = 128, 192
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    c_half = defines.get("C_HALF") == "1"
    c = bench.gemm(device, lib, a, b, config=config, c_dtype=np.float16 if c_half else np.float32)
    assert c.dtype == (np.float16 if c_half else np.float32)
    assert_close(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64),
                 rtol=1e-3 if c_half else 1e-4, atol=1e-3)


def compile_once(dev: mc.Device, src: str, defines=None, fast_math: bool = True) -> mc.Library:
    """dev.compile(src), once per (device, source, defines, fast_math) in this process.

    A compile error is cached too and re-raised to every caller.
    """
    dkey = None
    if defines is not None:
        dkey = tuple(sorted(defines.items())) if isinstance(defines, dict) else tuple(defines)
    key = (_dev_key(dev), src, dkey, fast_math)
    hit = _LIB_CACHE.get(key)
    if hit is None:
        try:
            hit = dev.compile(src, defines=defines, fast_math=fast_math)
        except mc.Error as e:  # noqa: PERF203
            hit = e
        _LIB_CACHE[key] = hit
    if isinstance(hit, BaseException):
        raise hit
    return hit


# Every KernelSet and standalone source the suite compiles, for test_count.py.
REGISTRY: list = []


def register_source(src: str, kernel_names=None) -> str:
    """Records a standalone source (compiled with compile_once) for the kernel tally."""
    names = kernel_names if kernel_names is not None else kernel_names_of(src)
    REGISTRY.append(("source", tuple(names)))
    return src


_KERNEL_NAME = re.compile(r"\bkernel\s+void\s+(\w+)|host_name\(\s*\"(\w+)\"\s*\)")


def kernel_names_of(src: str):
    """Kernel names in an MSL snippet (a template kernel counts by its [[host_name]]s)."""
    found = _KERNEL_NAME.findall(src)
    hosts = [b for _, b in found if b]
    return hosts if hosts else list(dict.fromkeys(a for a, _ in found if a))


class KernelSet:
    """A shared preamble plus kernel snippets, compiled as one source per device."""

    def __init__(self, snippets, preamble: str = "", header: str = HEADER, defines=None, fast_math: bool = True):
        self.header = header + preamble
        # a snippet is MSL text, or (kernel names, MSL text) where the names cannot be read
        # off the text (kernels made by macros, `[[kernel]]` spellings)
        given = [s if isinstance(s, tuple) else (None, s) for s in snippets]
        self.snippets = [s.strip("\n") + "\n" for _, s in given]
        self.defines = defines
        self.fast_math = fast_math
        self._names = []
        for (explicit, _), s in zip(given, self.snippets):
            if explicit is not None:
                self._names.append(list(explicit))
                continue
            names = kernel_names_of(s)
            if not names:
                raise ValueError(f"snippet defines no kernel:\n{s}")
            if "host_name" not in s and len(names) != 1:
                # one kernel per snippet keeps failures per kernel (and catches a missing
                # comma between two snippet strings, which Python would concatenate)
                raise ValueError(f"snippet defines {len(names)} kernels {names}; give each its own snippet")
            self._names.append(names)
        all_names = [n for ns in self._names for n in ns]
        assert len(all_names) == len(set(all_names)), f"duplicate kernel names: {all_names}"
        self._state: dict = {}
        REGISTRY.append(("set", tuple(self.kernel_names)))

    def with_defines(self, defines) -> KernelSet:
        """The same kernels compiled with other defines (a prelude option, say); their names
        are counted once, with this set."""
        other = copy.copy(self)
        other.defines = defines
        other._state = {}
        return other

    @property
    def kernel_names(self):
        """Names of the kernels this set defines (host names for template instantiations)."""
        return [n for ns in self._names for n in ns]

    def source(self, indices=None) -> str:
        idx = range(len(self.snippets)) if indices is None else indices
        return self.header + "\n".join(self.snippets[i] for i in idx)

    def _line_ranges(self, indices):
        """(first_line, last_line, snippet_index) of each snippet in source(indices), 1-based."""
        line = self.header.count("\n") + 1
        out = []
        for i in indices:
            n = self.snippets[i].count("\n")
            out.append((line, line + n - 1, i))
            line += n + 1  # the "\n" join
        return out

    def _build(self, dev):
        """Compiles the set; returns ({snippet index: Library}, {snippet index: error})."""
        remaining = list(range(len(self.snippets)))
        errors: dict[int, BaseException] = {}
        libs: dict[int, mc.Library] = {}
        attributable = True
        for _ in range(len(self.snippets) + 1):
            if not remaining:
                break
            try:
                lib = compile_once(dev, self.source(remaining), self.defines, self.fast_math)
                libs.update({i: lib for i in remaining})
                remaining = []
                break
            except mc.CompileError as e:
                culprit = None
                line = getattr(e, "line", None)
                if line:
                    for first, last, i in self._line_ranges(remaining):
                        if first <= line <= last:
                            culprit = i
                if culprit is None:
                    attributable = False  # preamble or prelude: compile each snippet alone
                    break
                errors[culprit] = e
                remaining.remove(culprit)
        if not attributable:
            for i in remaining:
                errors[i] = None
        # A snippet set aside is judged on its own: it may fail only next to another one
        # (then it compiles alone and its own tests run).
        for i in list(errors):
            try:
                libs[i] = compile_once(dev, self.source([i]), self.defines, self.fast_math)
                del errors[i]
            except mc.Error as e:
                errors[i] = e
        return libs, errors

    def library(self, dev: mc.Device, name: str) -> mc.Library:
        key = _dev_key(dev)
        if key not in self._state:
            self._state[key] = self._build(dev)
        libs, errors = self._state[key]
        for i, names in enumerate(self._names):
            if name in names:
                if i in errors:
                    raise errors[i]
                return libs[i]
        raise KeyError(f"no kernel {name!r} in this KernelSet")

    def index_of(self, name: str) -> int:
        """The index of the snippet that defines kernel `name`."""
        for i, names in enumerate(self._names):
            if name in names:
                return i
        raise KeyError(f"no kernel {name!r} in this KernelSet")

    def get(self, dev: mc.Device, name: str, constants=None):
        lib = self.library(dev, name)
        if constants is None:
            return lib.function(name)
        return lib.function(name, constants=constants)


# ---------------------------------------------------------------------------
# Models of MSL's 16-bit types
# ---------------------------------------------------------------------------


def bfloat_rounded(x):
    """float32 values rounded to bfloat (nearest, ties to even), as float32."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000).astype(np.uint32).view(np.float32)


def half_matrices(rng, n, scale):
    """n random 8x8 half matrices: their half storage (flat) and the matrices as float64."""
    h = (rng.standard_normal(n * 64) * scale).astype(np.float16)
    return h, h.astype(np.float64).reshape(n, 8, 8)


# ---------------------------------------------------------------------------
# Comparison helpers
# ---------------------------------------------------------------------------


def written_for_32_lanes(kernel: mc.Kernel) -> mc.Kernel:
    """`kernel`, or a skip where its pipeline's SIMD-groups are not 32 wide (the Metal simulator's Intel and
    AMD families run 8, 16 and 64 wide): the kernel or its model assumes Apple GPUs' 32 lanes (as CUDA and
    the CPU give), and such a GPU would compute something else (tests/test_metal_sim_simd_widths.py)."""
    if kernel.thread_execution_width != 32:
        pytest.skip(f"written for 32-wide SIMD-groups; this pipeline runs {kernel.thread_execution_width} wide")
    return kernel


def assert_close(actual, expected, rtol=1e-5, atol=1e-6, err_msg=""):
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"shape {actual.shape} != {expected.shape}"
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol,
                               err_msg=err_msg, equal_nan=True)


def assert_equal(actual, expected, err_msg=""):
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"shape {actual.shape} != {expected.shape}"
    np.testing.assert_array_equal(actual, expected, err_msg=err_msg)


_ISOLATED_CHILD = r"""
import pickle, sys
import metalcall as mc
with open(sys.argv[1], "rb") as f:
    job = pickle.load(f)
dev = mc.Device(job["device"], checked=True) if job.get("checked") else mc.Device(job["device"])
lib = dev.compile(job["src"], defines=job["defines"])
kernel = lib.function(job["kernel"])
args = job["args"]
kernel(job["grid"], *args, **job["options"])
with open(sys.argv[2], "wb") as f:
    pickle.dump(args, f)
"""


def run_isolated(dev: mc.Device, src: str, kernel: str, grid, *args, defines=None, timeout: float = 300, **options):
    """Runs one kernel call in a fresh interpreter and returns the arguments as they are
    after the call (arrays written by the kernel included).

    For kernels that crash the process on a backend with a known bug: the crash fails
    only the test that ran it (as an AssertionError naming the signal), not the suite.
    """
    import os
    import pickle
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        job_path, out_path = os.path.join(tmp, "job.pkl"), os.path.join(tmp, "out.pkl")
        with open(job_path, "wb") as f:
            pickle.dump({"device": f"{dev.backend}", "checked": bool(getattr(dev, "checked", False)), "src": src, "defines": defines, "kernel": kernel,
                         "grid": grid, "args": list(args), "options": options}, f)
        proc = subprocess.run([sys.executable, "-c", _ISOLATED_CHILD, job_path, out_path],
                              capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            how = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit status {proc.returncode}"
            raise AssertionError(f"kernel {kernel!r} crashed the process ({how}):\n{proc.stderr[-3000:]}")
        with open(out_path, "rb") as f:
            return pickle.load(f)
