"""The float32 GPU matrix product on SIMD-group matrices ("sgm"): simdgroup_float8x8 factors and
accumulators (fp32 multiply-adds throughout, no half or TF32), after benchmarks/bench_simdgroup_gemm.py.

A threadgroup of 2x2 SIMD-groups (128 threads) computes a 64x64 block of C; each SIMD-group keeps
4x4 accumulators of 8x8 (a 32x32 block). 64x16 slices of A and 16x64 of B pass through two stages
of threadgroup memory (rows padded by 8 floats, so an 8x8 load's rows fall into different banks):
while one stage is multiplied the next slices travel into registers, one barrier per slice.
Threadgroup memory: 21 KiB of tiles (16 KiB reused as the store's scratch), within Apple's 32 KiB.
Unchecked (m, n multiples of 64, k of 16; Buffers on 16 bytes): float4 loads, direct simdgroup_store.
Checked (any shape): bounds-checked scalar loads zero-pad the slices; each SIMD-group stores its
block into threadgroup scratch, then its lanes copy the part inside C.
"""

from __future__ import annotations

import functools

from . import cache

FM = FN = 4  # 8x8 accumulators per SIMD-group, down and across
SG_ROWS = SG_COLS = 2  # SIMD-groups per threadgroup, down and across
BM, BN = SG_ROWS * FM * 8, SG_COLS * FN * 8  # 64 x 64 outputs per threadgroup
BK = 16  # slice depth
PAD = 8
AS, BS = BK + PAD, BN + PAD  # padded row lengths (floats) of the A and B slices
THREADS = 32 * SG_ROWS * SG_COLS
A_VECS = BM * BK // 4 // THREADS  # float4s of A each thread moves per slice (2)
B_VECS = BK * BN // 4 // THREADS  # ... and of B (2)
TILE_FLOATS = 2 * (BM * AS + BK * BS)
SCRATCH_FLOATS = SG_ROWS * SG_COLS * FM * 8 * FN * 8
assert TILE_FLOATS * 4 <= 32768 and SCRATCH_FLOATS <= TILE_FLOATS and A_VECS * THREADS * 4 == BM * BK


def checked(m: int, n: int, k: int) -> bool:
    """True when the shape is no multiple of the block: the kernel then checks bounds."""
    return m % BM != 0 or n % BN != 0 or k % BK != 0


def grid(batch: int, m: int, n: int) -> tuple[int, int, int]:
    return THREADS * -(-n // BN), -(-m // BM), batch


def _fetch(checked: bool) -> str:
    """Loads of the slices at depth k0 into registers ra, rb (zeros outside A and B when checked)."""
    out = []
    for u in range(A_VECS):
        i = f"(tid + {u * THREADS}u)"
        if checked:
            out.append(f"    {{ const uint gr = row0 + {i} / {BK // 4}, gk = k0 + ({i} % {BK // 4}) * 4;\n"
                       "      const device float* p = A0 + ulong(gr) * k + gk; const bool ok = gr < m;\n"
                       f"      ra[{u}] = float4(ok && gk < k ? p[0] : 0.0f, ok && gk + 1 < k ? p[1] : 0.0f,\n"
                       "                     ok && gk + 2 < k ? p[2] : 0.0f, ok && gk + 3 < k ? p[3] : 0.0f); }\n")
        else:
            out.append(f"    ra[{u}] = *(const device float4*)(A0 + ulong(row0 + {i} / {BK // 4}) * k + k0"
                       f" + ({i} % {BK // 4}) * 4);\n")
    for u in range(B_VECS):
        i = f"(tid + {u * THREADS}u)"
        if checked:
            out.append(f"    {{ const uint gk = k0 + {i} / {BN // 4}, gc = col0 + ({i} % {BN // 4}) * 4;\n"
                       "      const device float* p = B0 + ulong(gk) * n + gc; const bool ok = gk < k;\n"
                       f"      rb[{u}] = float4(ok && gc < n ? p[0] : 0.0f, ok && gc + 1 < n ? p[1] : 0.0f,\n"
                       "                     ok && gc + 2 < n ? p[2] : 0.0f, ok && gc + 3 < n ? p[3] : 0.0f); }\n")
        else:
            out.append(f"    rb[{u}] = *(const device float4*)(B0 + ulong(k0 + {i} / {BN // 4}) * n + col0"
                       f" + ({i} % {BN // 4}) * 4);\n")
    return "".join(out)


def _stash() -> str:
    """Registers ra, rb into the slices of stage `as`, `bs` (float4 stores: AS, BS are multiples of 4)."""
    out = []
    for u in range(A_VECS):
        i = f"(tid + {u * THREADS}u)"
        out.append(f"    *(threadgroup float4*)(as + ({i} / {BK // 4}) * {AS} + ({i} % {BK // 4}) * 4) = ra[{u}];\n")
    for u in range(B_VECS):
        i = f"(tid + {u * THREADS}u)"
        out.append(f"    *(threadgroup float4*)(bs + ({i} / {BN // 4}) * {BS} + ({i} % {BN // 4}) * 4) = rb[{u}];\n")
    return "".join(out)


def _store(checked: bool) -> str:
    if not checked:
        return ("  #pragma unroll\n"
                f"  for (uint i = 0; i < {FM}; ++i)\n"
                "    #pragma unroll\n"
                f"    for (uint j = 0; j < {FN}; ++j)\n"
                "      simdgroup_store(acc[i][j], O0, n, ulong2(col0 + sc + 8 * j, row0 + sr + 8 * i));\n")
    w = FN * 8  # row length of a SIMD-group's scratch block
    return ("  threadgroup_barrier(mem_flags::mem_threadgroup);  // every SIMD-group is done with the slices\n"
            f"  threadgroup float* sc_out = (threadgroup float*)tiles + sg * {FM * 8 * w};\n"
            "  #pragma unroll\n"
            f"  for (uint i = 0; i < {FM}; ++i)\n"
            "    #pragma unroll\n"
            f"    for (uint j = 0; j < {FN}; ++j) simdgroup_store(acc[i][j], sc_out, {w}, ulong2(8 * j, 8 * i));\n"
            "  simdgroup_barrier(mem_flags::mem_threadgroup);\n"
            f"  for (uint e = tid % 32; e < {FM * 8 * w}; e += 32) {{\n"
            f"    const uint r = row0 + sr + e / {w}, c = col0 + sc + e % {w};\n"
            "    if (r < m && c < n) O0[ulong(r) * n + c] = sc_out[e];\n"
            "  }\n")


@functools.lru_cache(maxsize=None)
def source(checked: bool) -> str:
    return (cache.header() +
            "kernel void mm(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],\n"
            "    device float* out [[buffer(2)]], constant uint& m [[buffer(3)]], constant uint& n [[buffer(4)]],\n"
            "    constant uint& k [[buffer(5)]],\n"
            "    uint3 gp [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],\n"
            "    uint sg [[simdgroup_index_in_threadgroup]]) {\n"
            f"  threadgroup float4 tiles[{TILE_FLOATS // 4}];  // float4: 16-byte aligned\n"
            "  threadgroup float* As = (threadgroup float*)tiles;  // [2][BM][AS]\n"
            f"  threadgroup float* Bs = As + {2 * BM * AS};  // [2][BK][BS]\n"
            f"  const uint row0 = gp.y * {BM}, col0 = gp.x * {BN};\n"
            f"  const uint sr = (sg / {SG_COLS}) * {FM * 8}, sc = (sg % {SG_COLS}) * {FN * 8};  // this SIMD-group's block\n"
            "  const device float* A0 = a + ulong(gp.z) * m * k;\n"
            "  const device float* B0 = b + ulong(gp.z) * k * n;\n"
            "  device float* O0 = out + ulong(gp.z) * m * n;\n"
            f"  simdgroup_float8x8 acc[{FM}][{FN}];\n"
            "  #pragma unroll\n"
            f"  for (uint i = 0; i < {FM}; ++i)\n"
            "    #pragma unroll\n"
            f"    for (uint j = 0; j < {FN}; ++j) acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);\n"
            f"  float4 ra[{A_VECS}], rb[{B_VECS}];\n"
            "  uint k0 = 0;\n"
            "  {\n" + _fetch(checked) + "  }\n"
            f"  for (uint stage = 0; k0 < k; stage ^= 1) {{\n"
            f"    threadgroup float* as = As + stage * {BM * AS};\n"
            f"    threadgroup float* bs = Bs + stage * {BK * BS};\n"
            + _stash() +
            "    threadgroup_barrier(mem_flags::mem_threadgroup);\n"
            f"    k0 += {BK};\n"
            "    if (k0 < k) {  // the next slices, in flight while this stage is multiplied\n"
            + _fetch(checked) +
            "    }\n"
            "    #pragma unroll\n"
            f"    for (uint kk = 0; kk < {BK}; kk += 8) {{\n"
            f"      simdgroup_float8x8 fa[{FM}], fb[{FN}];\n"
            "      #pragma unroll\n"
            f"      for (uint i = 0; i < {FM}; ++i) simdgroup_load(fa[i], as, {AS}, ulong2(kk, sr + 8 * i));\n"
            "      #pragma unroll\n"
            f"      for (uint j = 0; j < {FN}; ++j) simdgroup_load(fb[j], bs, {BS}, ulong2(sc + 8 * j, kk));\n"
            "      #pragma unroll\n"
            f"      for (uint i = 0; i < {FM}; ++i)\n"
            "        #pragma unroll\n"
            f"        for (uint j = 0; j < {FN}; ++j) simdgroup_multiply_accumulate(acc[i][j], fa[i], fb[j], acc[i][j]);\n"
            "    }\n"
            "  }\n"
            + _store(checked) +
            "}\n")
