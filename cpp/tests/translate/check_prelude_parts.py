#!/usr/bin/env python3
"""Checks which prelude parts a CUDA translation gets (backends/translated/prelude_parts.cpp, read
by msl/prelude/metal_stdlib.h): a kernel of float scalars none, each feature its part and the
parts that part needs, a defines= value its own. No NVRTC needed (tools/cuda_prelude_parts_check.py
compiles and compares PTX where NVRTC is). Also fails when a prelude header belongs to no part
(the tables then give the whole prelude to every kernel: no options at all).

    check_prelude_parts.py PATH/TO/translate_main
"""
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent.parent / "tools"))
import cuda_prelude_parts_check  # noqa: E402

HEAD = "#include <metal_stdlib>\nusing namespace metal;\n"
K = "kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]"
# (name, kernel source, -D arguments, the parts expected)
CASES = [
    ("float scalars", K + ") { a[i] = a[i] * 2.0f + float(i); }", [], []),
    ("a loop (stop checks)", K + ") { for (uint j = 0; j < i; ++j) a[i] += 1.0f; }", [], []),
    ("half", K + ") { half h = half(a[i]); a[i] = float(h * 2.0h); }", [], ["HALF"]),
    ("float4", K + ") { float4 v = float4(a[i]); a[i] = v.w; }", [], ["HALF", "VECTOR"]),
    ("as_type", K + ") { a[i] = as_type<float>(as_type<uint>(a[i]) ^ 1u); }", [], ["HALF", "VECTOR", "BASE"]),
    ("sin", K + ") { a[i] = sin(a[i]); }", [], ["HALF", "VECTOR", "BASE", "MATH"]),
    ("int min", K + ") { a[i] = float(min(int(i), 3)); }", [], ["HALF", "VECTOR", "BASE", "MATH"]),
    ("a define calls sin", K + ") { a[i] = F(a[i]); }", ["-DF=sin"], ["HALF", "VECTOR", "BASE", "MATH"]),
    ("float2x2", K + ") { float2x2 m(1.0f); a[i] = m[0][0]; }", [], ["HALF", "VECTOR", "BASE", "MATH", "MATRIX"]),
    ("barrier", K + ") { threadgroup_barrier(mem_flags::mem_threadgroup); a[i] = 1.0f; }", [],
     ["HALF", "VECTOR", "BASE", "SYNC"]),
    ("atomic", "kernel void k(device atomic_uint* a [[buffer(0)]]) { atomic_fetch_add_explicit(a, 1u, "
     "memory_order_relaxed); }", [], ["HALF", "VECTOR", "BASE", "SYNC", "ATOMIC"]),
    ("simd_sum", K + ") { a[i] = simd_sum(a[i]); }", [], ["HALF", "VECTOR", "BASE", "MATH", "SYNC", "SIMD"]),
    ("simdgroup_matrix", K + ") { simdgroup_float8x8 m; simdgroup_load(m, a, 8); simdgroup_store(m, a, 8); }", [],
     ["HALF", "VECTOR", "BASE", "MATH", "SYNC", "SIMD", "SGMATRIX"]),
    ("__metal_fabs", K + ") { a[i] = __metal_fabs(a[i], false); }", [],
     ["HALF", "VECTOR", "BASE", "MATH", "SYNC", "SIMD", "APPLE"]),
    ("texture", "kernel void k(texture2d<float, access::read> t [[texture(0)]], device float* a [[buffer(0)]], "
     "uint2 p [[thread_position_in_grid]]) { a[p.x] = t.read(p).x; }", [],
     ["HALF", "VECTOR", "BASE", "MATH", "SYNC", "ATOMIC", "TEXTURE"]),  # ATOMIC: texture atomics
]


def main() -> int:
    translate_main = sys.argv[1]
    failures = 0
    with tempfile.TemporaryDirectory(prefix="prelude-parts-") as tmp:
        work = Path(tmp)
        helper = cuda_prelude_parts_check.build_helper(work)
        for name, body, defines, expected in CASES:
            src = work / "k.metal"
            src.write_text(HEAD + body + "\n")
            tr = subprocess.run([translate_main, "--target", "cuda", *defines, str(src)], capture_output=True, text=True)
            if tr.returncode != 0:
                print(f"FAIL: {name}: does not translate:\n{tr.stderr[-1500:]}")
                failures += 1
                continue
            cu = work / "k.cu"
            cu.write_text(tr.stdout)
            options = subprocess.run([str(helper), str(cu)], capture_output=True, text=True, check=True).stdout.split()
            if "-DMETALCALL_PRELUDE_PARTS=1" not in options:
                print(f"FAIL: {name}: no parts at all (a prelude header in no part of prelude_parts.cpp?)")
                failures += 1
                continue
            got = [o[len("-DMETALCALL_PART_"):-2] for o in options if o.startswith("-DMETALCALL_PART_")]
            if got != expected:
                print(f"FAIL: {name}: parts {got}, expected {expected}")
                failures += 1
            else:
                print(f"ok: {name}: {','.join(got) or 'none'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
