"""The cost of a new specialisation of one kernel of a 40-kernel GEMM file (issue P2.0
item 4), against that kernel compiled alone.

    METALCALL_CORPUS=/path/with/mlx python benchmarks/bench_per_kernel_build.py [--kernels 40]

MLX's steel_gemm_fused.metal (read from $METALCALL_CORPUS/mlx, a checkout of
ml-explore/mlx; nothing of it is copied here) is flattened and split by
tools/msl_corpus_survey.py: every helper declaration plus the first N float16/float32
kernels make the "file"; the helpers plus the chosen kernel alone make the "alone" source.
Each source is compiled with an empty cache (a private METALCALL_CACHE_DIR), then
`function(name, constants)` asks for one new specialisation (the values MLX uses for an
aligned plain product); that call is timed: wall time, and user+sys CPU time of this
process and of the compilers it ran (the machine is shared: CPU time is the steadier
figure). The specialised kernel is run once on a 128x64x32 product and checked against
NumPy.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import metalcall as mc

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "corpus"))
from corpus_support import survey  # noqa: E402  (the corpus tests' flattening, not duplicated)

FILE = "mlx/mlx/backend/metal/kernels/steel/gemm/kernels/steel_gemm_fused.metal"
KERNEL = "steel_gemm_fused_nn_float32_float32_bm64_bn64_bk16_wm2_wn2"
CONSTANTS = {"has_batch": False, "use_out_source": False, "do_axpby": False,
             "align_M": True, "align_N": True, "align_K": True}
PARAMS = np.dtype({"names": ["M", "N", "K", "lda", "ldb", "ldd", "tiles_n", "tiles_m", "batch_stride_a",
                             "batch_stride_b", "batch_stride_d", "swizzle_log", "gemm_k_iterations_aligned",
                             "batch_ndim"],
                   "formats": ["<i4"] * 8 + ["<i8"] * 3 + ["<i4"] * 3}, align=True)  # steel/gemm/params.h


def sources(corpus: Path, count: int):
    s = survey()
    path = corpus / FILE
    text = s.expand(s.flatten(path, [corpus / "mlx"]), [])
    helpers, kernels = [], []
    for chunk in s.chunks(text):
        names = s.kernel_names(chunk)
        (kernels.append((names, chunk)) if names else helpers.append(chunk))
    chosen = [(n, c) for n, c in kernels if "_float32_" in n[0] or "_float16_" in n[0]][:count]
    assert any(KERNEL in n for n, _ in chosen), "the timed kernel is not among the chosen ones"
    whole = s.HEADER + "\n".join(helpers + [c for _, c in chosen])
    alone = s.HEADER + "\n".join(helpers + [c for n, c in chosen if KERNEL in n])
    return whole, alone, len(chosen)


def cpu_seconds():
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def timed(fn):
    wall, cpu = time.perf_counter(), cpu_seconds()
    result = fn()
    return result, time.perf_counter() - wall, cpu_seconds() - cpu


def check(kernel):
    m, n, k = 128, 64, 32
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    d = np.zeros((m, n), np.float32)
    params = np.zeros(1, PARAMS)
    for key, value in dict(M=m, N=n, K=k, lda=k, ldb=n, ldd=n, tiles_n=n // 64, tiles_m=m // 64, batch_stride_a=m * k,
                           batch_stride_b=k * n, batch_stride_d=m * n, swizzle_log=0, gemm_k_iterations_aligned=k // 16,
                           batch_ndim=1).items():
        params[key] = value
    params = params[0]  # a struct passed by value, as tests/corpus passes it
    kernel((n // 64 * 32, m // 64 * 2, 2), a, b, None, d, params, threadgroup=(32, 2, 2))  # (n/64, m/64) groups
    want = a.astype(np.float64) @ b.astype(np.float64)
    return float(np.max(np.abs(d - want) / (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)))))


def measure(source: str):
    with tempfile.TemporaryDirectory() as cache:
        os.environ["METALCALL_CACHE_DIR"] = cache
        device = mc.Device("cpu")
        lib, compile_wall, compile_cpu = timed(lambda: device.compile(source))
        kernel, wall, cpu = timed(lambda: lib.function(KERNEL, constants=CONSTANTS))
        error = check(kernel)
    return {"compile_wall_s": round(compile_wall, 2), "compile_cpu_s": round(compile_cpu, 2),
            "specialise_wall_s": round(wall, 2), "specialise_cpu_s": round(cpu, 2), "max_rel_error": error}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", type=int, default=40)
    ap.add_argument("--only", choices=["file", "alone"], help="measure one of the two sources")
    args = ap.parse_args()
    corpus = Path(os.environ.get("METALCALL_CORPUS", REPO / ".devcarry" / "corpus"))
    whole, alone, count = sources(corpus, args.kernels)
    out = {"metalcall": mc.__file__, "kernel": KERNEL, "kernels_in_file": count}
    for label, source in [("file", whole), ("alone", alone)]:
        if args.only in (None, label):
            out[label] = measure(source)
            print(label, out[label], flush=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
