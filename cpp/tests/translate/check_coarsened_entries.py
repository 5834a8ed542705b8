#!/usr/bin/env python3
"""Checks which kernels get CUDA's coarsened entry point (msl/targets/entry_points.hpp,
coarsenable; target_cuda.cpp): straight-line kernels whose threads read nothing but their scalar
thread_position_in_grid get `metalcall_entry_N_x4`; a loop or threadgroup storage the kernel may
reach (its body, a helper it names, an operator at namespace scope), precise sin, cos, tan or
sincos it may reach (by name, where the source names one unqualified by fast::), barriers, other
builtins, a vector position or no position give none, and the CPU target never writes one. With NVRTC the coarsened translations must compile, and the
coarsened c[i] = a[i] * b[i] must load and store with 16-byte vector instructions.

    check_coarsened_entries.py PATH/TO/translate_main
"""
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent.parent / "tools"))
import nvrtc_check  # noqa: E402

HEAD = "#include <metal_stdlib>\nusing namespace metal;\n"
MUL = """kernel void mul(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                device float* c [[buffer(2)]], uint i [[thread_position_in_grid]]) { c[i] = a[i] * b[i]; }
"""
# A `constant float&` beside device stores: copied in the coarsened entry, so that the four
# positions' stores still merge (metalcall.numpy's fused chains pass their scalars this way).
SCALED = """kernel void axpb(const device float* x [[buffer(0)]], const device float* y [[buffer(1)]],
                 constant float& s [[buffer(2)]], device float* z [[buffer(3)]],
                 uint i [[thread_position_in_grid]]) { z[i] = (x[i] + y[i]) * (x[i] - y[i]) + s; }
"""
VECTOR_OPS = {"c = a * b": 3, "(x + y) * (x - y) + s, s a constant float&": 3}
# (name, source, coarsened entries expected: one flag per kernel, in source order)
CASES = [
    ("c = a * b", MUL, [True]),
    ("(x + y) * (x - y) + s, s a constant float&", SCALED, [True]),
    ("two kernels, a helper, an early return, half, ushort, a value, an atomic", """
inline half twice(half x) { return x + x; }
kernel void halves(const device half* a [[buffer(0)]], device half* c [[buffer(1)]],
                   constant half& s [[buffer(2)]], ushort i [[thread_position_in_grid]]) {
    if (i % 3 == 0) return;
    c[i] = twice(a[i]) * s;
}
kernel void count(device atomic_uint* n [[buffer(0)]], device uint* o [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
    atomic_fetch_add_explicit(n, 1u, memory_order_relaxed);
    o[i] = i > 5 ? i : 0u;
}
""", [True, True]),
    ("precise sin or cos (CUDA's sinf four times a thread ran slower), fast::sin, a helper's cos", """
inline float wave(float x) { return cos(x) * 0.5f; }
kernel void precise(const device float* a [[buffer(0)]], device float* c [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    c[i] = sin(a[i]) * 2.0f;
}
kernel void fast_sin(const device float* a [[buffer(0)]], device float* c [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    c[i] = fast::sin(a[i]);
}
kernel void helper(const device float* a [[buffer(0)]], device float* c [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    c[i] = wave(a[i]);
}
kernel void plain(const device float* a [[buffer(0)]], device float* c [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    c[i] = a[i] + 1.0f;
}
""", [False, False, False, True]),
    ("only fast::sin", """
kernel void fast_only(const device float* a [[buffer(0)]], device float* c [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    c[i] = fast::sin(a[i]) + fast::cos(a[i]);
}
""", [True]),
    ("a loop in another kernel", MUL + """
kernel void sum_row(const device float* a [[buffer(0)]], device float* c [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    float s = 0; for (uint k = 0; k < 4; ++k) s += a[4 * i + k]; c[i] = s;
}
""", [True, False]),
    ("a loop in a helper one kernel calls", """
inline float total(const device float* a, uint i) { float s = 0; uint k = 0; while (k < 4) s += a[4 * i + k++]; return s; }
struct Scale { float f; float apply(float x) const { return x * f; } };
kernel void rows(const device float* a [[buffer(0)]], device float* c [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    c[i] = total(a, i);
}
kernel void scaled(const device float* a [[buffer(0)]], device float* c [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    c[i] = Scale{2.0f}.apply(a[i]);
}
""", [False, True]),
    ("a loop in an operator at namespace scope", """
struct V { float x; };
inline V operator+(V a, V b) { for (int k = 0; k < 1; ++k) a.x += b.x; return a; }
kernel void add(const device float* a [[buffer(0)]], device float* c [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    c[i] = a[i] + 1.0f;
}
""", [False]),
    ("threadgroup storage without a barrier", """
kernel void staged(const device float* a [[buffer(0)]], device float* c [[buffer(1)]], uint i [[thread_position_in_grid]],
                   uint l [[thread_position_in_threadgroup]]) {
    threadgroup float t[256]; t[l] = a[i]; c[i] = t[l];
}
""", [False]),
    ("a barrier", """
kernel void swap(device float* c [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    threadgroup_barrier(mem_flags::mem_device); c[i] = 1.0f;
}
""", [False]),
    ("another builtin", """
kernel void last(device float* c [[buffer(0)]], uint i [[thread_position_in_grid]], uint n [[threads_per_grid]]) {
    c[i] = float(n - i);
}
""", [False]),
    ("a vector position", """
kernel void plane(device float* c [[buffer(0)]], uint2 p [[thread_position_in_grid]]) { c[p.x] = float(p.y); }
""", [False]),
    ("no position", """
kernel void one(device float* c [[buffer(0)]]) { c[0] = 1.0f; }
""", [False]),
]


def translate(exe, target, source):
    with tempfile.NamedTemporaryFile("w", suffix=".metal", delete=False) as f:
        f.write(HEAD + source)
    try:
        r = subprocess.run([exe, "--target", target, f.name], capture_output=True, text=True)
    finally:
        Path(f.name).unlink()
    if r.returncode != 0:
        print(r.stderr)
        raise SystemExit(f"FAIL: translate_main --target {target} failed")
    return r.stdout


def nvrtc_major(lib: str):
    """The major version of the libnvrtc at `lib` (nvrtcVersion), or None."""
    import ctypes
    try:
        major, minor = ctypes.c_int(), ctypes.c_int()
        if ctypes.CDLL(lib).nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)) == 0:
            return major.value
    except OSError:
        pass
    return None


def main():
    exe = sys.argv[1]
    failures, coarsened = [], []
    for name, source, expected in CASES:
        cuda = translate(exe, "cuda", source)
        got = [f"metalcall_entry_{k}_x4(" in cuda for k in range(len(expected))]
        if got != expected:
            failures.append(f"CUDA, {name}: coarsened entry points {got}, expected {expected}")
        if "_x4(" in translate(exe, "cpu", source):
            failures.append(f"CPU, {name}: a coarsened entry point (CUDA's only)")
        if any(expected):
            coarsened.append((name, cuda))
    print(f"translation: {sum(map(any, (c[2] for c in CASES)))} of {len(CASES)} sources get coarsened entry points")
    found, why = nvrtc_check.find_nvrtc()
    if not found:
        print(f"SKIP (NVRTC part): {why}")
    else:
        for name, code in coarsened:
            ptx = []
            ok, log, seconds = nvrtc_check.compile_cuda(code, "compute_90", *found, ptx=ptx)
            print(f"NVRTC, coarsened {name}: {'compiled' if ok else 'FAILED'} in {seconds:.1f} s")
            if not ok:
                print(log)
                failures.append(f"NVRTC could not compile the coarsened translation of {name}")
            elif name in VECTOR_OPS:
                entry = ptx[0][ptx[0].index(".entry metalcall_entry_0_x4"):]
                entry = entry[:entry.index("\n}\n")]
                vector = len(re.findall(r"(ld|st)\.global(\.nc)?\.v4\.f32", entry))
                major = nvrtc_major(found[0])
                if major is not None and major < 13:
                    # NVRTC 12.x merges none of them (docs/design.md, "Straight-line kernels run
                    # four threads per CUDA thread"): said, not failed.
                    print(f"NVRTC {major}: the coarsened {name} has {vector} 16-byte loads and stores "
                          f"(NVRTC 13 merges them into {VECTOR_OPS[name]})")
                elif vector != VECTOR_OPS[name]:
                    failures.append(f"CUDA: the coarsened {name} has {vector} 16-byte loads and stores, "
                                    f"expected {VECTOR_OPS[name]}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
