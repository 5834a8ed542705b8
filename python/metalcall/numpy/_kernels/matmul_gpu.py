"""The GPU matrix product: tiled kernels with threadgroup staging, one per named variant.

Every variant: 128x128 outputs per threadgroup of 256 threads, each thread accumulating 8x8 in
registers; BK-deep slices of A and B staged in two threadgroup buffers, the next slice loaded
into registers while the current one is multiplied (one barrier per slice). Each output is one
sequential sum over k (with fused multiply-adds under fast math), as in any tiled GEMM.
- "rows8": thread (tr, tc) owns 8 consecutive rows and columns; scalar loads. Any dtype.
- "quad8", "quad16" (u2, u1: the slice loop unrolled by 2 or 1, fewer registers): float32
  only. The thread's 8x8 is four 4x4 quadrants 64 rows/columns apart, so the 16 threads of a
  half-warp read 16 consecutive float4 of a slice row (no bank conflicts); A and B come from
  memory as float4 and A's slice is stored transposed with 4 floats of padding per row
  (conflict-free transposing stores); results leave as float4. BK = 8 or 16. The slices are
  float4 arrays, so their float4 reads are aligned everywhere.
"""

from __future__ import annotations

import functools

from . import cache

BM = BN = 128
THREADS = 256
# name -> (BK, quadrant layout with float4 staging, unrolling of the loop over a slice: 0 = all).
# Registers per thread, from ptxas -v for sm_90 on an equivalent CUDA C++ kernel (nvcc 13.0):
# rows8 129, quad8 128, quad8u2 122, quad8u1 108, quad16 153, quad16u2 122 (rows8 unrolled by
# 2: 130, quad16 by 4: 145, left out). The CUDA translation emits no __launch_bounds__, so
# ptxas spends registers freely; over 128 only one 256-thread group fits an SM.
VARIANTS: dict[str, tuple[int, bool, int]] = {
    "rows8": (8, False, 0), "quad8": (8, True, 0), "quad8u2": (8, True, 2), "quad8u1": (8, True, 1),
    "quad16": (16, True, 0), "quad16u2": (16, True, 2)}


# Metal's threadgroup memory (Apple GPUs: 32 KiB; the CPU backend keeps that limit).
METAL_THREADGROUP_BYTES = 32 * 1024


def threadgroup_bytes(variant: str) -> int:
    """Threadgroup memory of a variant's two A and B slices (float32)."""
    bk, quad, _ = VARIANTS[variant]
    a_row = BM + 4 if quad else BM  # the quad layout pads A's transposed rows by 4 floats
    return 2 * bk * (a_row + BN) * 4


# Variants over Metal's limit run on CUDA only: quad16 and quad16u2 (33 280 bytes).
CUDA_ONLY = frozenset(v for v in VARIANTS if threadgroup_bytes(v) > METAL_THREADGROUP_BYTES)


def checked(variant: str, m: int, n: int, k: int) -> bool:
    """True when the shape is no multiple of the tile: the kernel then checks bounds."""
    bk = VARIANTS[variant][0]
    return m % BM != 0 or n % BN != 0 or k % bk != 0


def grid(batch: int, m: int, n: int) -> tuple[int, int, int]:
    return THREADS * -(-n // BN), -(-m // BM), batch


def source(variant: str, T: str, A: str, is_bool: bool, checked: bool) -> str:
    bk, quad, unroll = VARIANTS[variant]
    if quad:
        if T != "float" or A != "float":
            raise ValueError(f"matmul variant {variant!r} is for float32 only")
        return _quad_source(bk, checked, unroll)
    return _rows_source(T, A, is_bool, checked, bk, unroll)


def _store(T: str, is_bool: bool, value: str) -> str:
    return f"({value}) != 0" if is_bool else f"{T}({value})"


@functools.lru_cache(maxsize=None)
def _rows_source(T: str, A: str, is_bool: bool, checked: bool, BK: int, unroll: int) -> str:
    TM = TN = 8
    a_per = BM * BK // THREADS  # A elements each thread moves per slice
    b_per = BK * BN // THREADS
    def a_load(u: str) -> str:
        cond = "(gr < m && gk < k)" if checked else "true"
        return (f"    {{ const uint e = tid * {a_per} + {u}; const uint r = e / {BK}, kk = e % {BK};\n"
                f"      const uint gr = row0 + r, gk = k0 + kk;\n"
                f"      ra[{u}] = {cond} ? {A}(a[abase + ulong(gr) * k + gk]) : {A}(0); }}\n")
    def b_load(u: str) -> str:
        cond = "(gk < k && gc < n)" if checked else "true"
        return (f"    {{ const uint e = tid * {b_per} + {u}; const uint kk = e / {BN}, c = e % {BN};\n"
                f"      const uint gk = k0 + kk, gc = col0 + c;\n"
                f"      rb[{u}] = {cond} ? {A}(b[bbase + ulong(gk) * n + gc]) : {A}(0); }}\n")
    def to_tile(buf: str) -> str:
        return ("    #pragma unroll\n"
                f"    for (uint u = 0; u < {a_per}; ++u) {{ const uint e = tid * {a_per} + u;\n"
                f"      As[{buf}][e % {BK}][e / {BK}] = ra[u]; }}\n"
                "    #pragma unroll\n"
                f"    for (uint u = 0; u < {b_per}; ++u) {{ const uint e = tid * {b_per} + u;\n"
                f"      Bs[{buf}][e / {BN}][e % {BN}] = rb[u]; }}\n")
    loads = "".join(a_load(str(u)) for u in range(a_per)) + "".join(b_load(str(u)) for u in range(b_per))
    store_cond = "if (r < m && c < n) " if checked else ""
    return (cache.header() +
            f"kernel void mm(const device {T}* a [[buffer(0)]], const device {T}* b [[buffer(1)]],\n"
            f"    device {T}* out [[buffer(2)]], constant uint& m [[buffer(3)]], constant uint& n [[buffer(4)]],\n"
            "    constant uint& k [[buffer(5)]],\n"
            "    uint3 gp [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {\n"
            f"  threadgroup {A} As[2][{BK}][{BM}];\n  threadgroup {A} Bs[2][{BK}][{BN}];\n"
            f"  const uint row0 = gp.y * {BM}, col0 = gp.x * {BN};\n"
            "  const ulong abase = ulong(gp.z) * m * k, bbase = ulong(gp.z) * k * n;\n"
            f"  const uint tr = tid / {BN // TN}, tc = tid % {BN // TN};\n"
            f"  {A} acc[{TM}][{TN}];\n"
            "  #pragma unroll\n"
            f"  for (uint i = 0; i < {TM}; ++i)\n"
            "    #pragma unroll\n"
            f"    for (uint j = 0; j < {TN}; ++j) acc[i][j] = {A}(0);\n"
            f"  {A} ra[{a_per}], rb[{b_per}];\n"
            "  uint k0 = 0;\n"
            f"{loads}"
            f"{to_tile('0')}"
            "  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
            "  uint cur = 0;\n"
            f"  for (k0 = {BK}; k0 < k + {BK}; k0 += {BK}) {{\n"
            "    const bool more = k0 < k;\n"
            "    if (more) {\n"
            f"{loads}"
            "    }\n"
            f"    #pragma unroll{f' {unroll}' if unroll else ''}\n"
            f"    for (uint kk = 0; kk < {BK}; ++kk) {{\n"
            f"      {A} av[{TM}], bv[{TN}];\n"
            "      #pragma unroll\n"
            f"      for (uint i = 0; i < {TM}; ++i) av[i] = As[cur][kk][tr * {TM} + i];\n"
            "      #pragma unroll\n"
            f"      for (uint j = 0; j < {TN}; ++j) bv[j] = Bs[cur][kk][tc * {TN} + j];\n"
            "      #pragma unroll\n"
            f"      for (uint i = 0; i < {TM}; ++i)\n"
            "        #pragma unroll\n"
            f"        for (uint j = 0; j < {TN}; ++j) acc[i][j] += av[i] * bv[j];\n"
            "    }\n"
            "    if (more) {\n"
            f"{to_tile('cur ^ 1')}"
            "    }\n"
            "    threadgroup_barrier(mem_flags::mem_threadgroup);\n"
            "    cur ^= 1;\n"
            "  }\n"
            "  #pragma unroll\n"
            f"  for (uint i = 0; i < {TM}; ++i)\n"
            "    #pragma unroll\n"
            f"    for (uint j = 0; j < {TN}; ++j) {{\n"
            f"    const uint r = row0 + tr * {TM} + i, c = col0 + tc * {TN} + j;\n"
            f"    {store_cond}out[ulong(gp.z) * m * n + ulong(r) * n + c] = {_store(T, is_bool, 'acc[i][j]')};\n"
            "  }\n}\n")


@functools.lru_cache(maxsize=None)
def _quad_source(BK: int, checked: bool, unroll: int) -> str:
    RA = BM + 4  # floats per row of A's transposed slice: 4 of padding spread the banks
    # The slices are float4 arrays: a float array's threadgroup memory need not start on 16
    # bytes (CUDA aligns __shared__ arrays to their element type), and float4 reads need it.
    per = BK // 8  # float4s of A and of B each thread moves per slice
    kq = BK // 4  # float4s per row of A's slice
    def setup() -> str:
        """Unchecked: pointers to this thread's float4s of the first slice; each slice moves
        them by BK columns of A and BK rows of B (fewer live registers than indexing anew)."""
        if checked:
            return ""
        out = [f"  const ulong bstep = ulong(n) * {BK};\n"]
        for u in range(per):
            out.append(f"  const device float* pa{u} = A0 + ulong(row0 + (tid + {u * THREADS}u) / {kq}) * k"
                       f" + ((tid + {u * THREADS}u) % {kq}) * 4;\n"
                       f"  const device float* pb{u} = B0 + ulong((tid + {u * THREADS}u) / {BN // 4}) * n + col0"
                       f" + ((tid + {u * THREADS}u) % {BN // 4}) * 4;\n")
        return "".join(out)
    def loads() -> str:
        out = []
        for u in range(per):
            if checked:
                out.append(f"    {{ const uint e = tid + {u * THREADS}u, r = e / {kq}, gk = k0 + (e % {kq}) * 4;\n"
                           "      const uint gr = row0 + r;\n      const device float* p = A0 + ulong(gr) * k + gk;\n"
                           "      const bool ok = gr < m;\n"
                           f"      ra[{u}] = float4(ok && gk < k ? p[0] : 0.0f, ok && gk + 1 < k ? p[1] : 0.0f,\n"
                           "                     ok && gk + 2 < k ? p[2] : 0.0f, ok && gk + 3 < k ? p[3] : 0.0f); }\n")
            else:
                out.append(f"    ra[{u}] = *(const device float4*)pa{u}; pa{u} += {BK};\n")
        for u in range(per):
            if checked:
                out.append(f"    {{ const uint e = tid + {u * THREADS}u, gk = k0 + e / {BN // 4},"
                           f" gc = col0 + (e % {BN // 4}) * 4;\n"
                           "      const device float* p = B0 + ulong(gk) * n + gc;\n      const bool ok = gk < k;\n"
                           f"      rb[{u}] = float4(ok && gc < n ? p[0] : 0.0f, ok && gc + 1 < n ? p[1] : 0.0f,\n"
                           "                     ok && gc + 2 < n ? p[2] : 0.0f, ok && gc + 3 < n ? p[3] : 0.0f); }\n")
            else:
                out.append(f"    rb[{u}] = *(const device float4*)pb{u}; pb{u} += bstep;\n")
        return "".join(out)
    def to_tile(buf: str) -> str:
        out = []
        for u in range(per):
            out.append(f"    {{ const uint e = tid + {u * THREADS}u, r = e / {kq}, kk = (e % {kq}) * 4;\n"
                       f"      threadgroup float* as = (threadgroup float*)&As[{buf}][kk][0];\n"
                       f"      as[r] = ra[{u}].x; as[{RA} + r] = ra[{u}].y; as[{2 * RA} + r] = ra[{u}].z;"
                       f" as[{3 * RA} + r] = ra[{u}].w; }}\n")
        for u in range(per):
            out.append(f"    {{ const uint e = tid + {u * THREADS}u;\n"
                       f"      Bs[{buf}][e / {BN // 4}][e % {BN // 4}] = rb[{u}]; }}\n")
        return "".join(out)
    def store_row(i: int) -> str:
        r = f"row0 + tr * 4 + {i}" if i < 4 else f"row0 + 64 + tr * 4 + {i - 4}"
        vals = lambda j0: f"float4(acc[{i}][{j0}], acc[{i}][{j0 + 1}], acc[{i}][{j0 + 2}], acc[{i}][{j0 + 3}])"
        if not checked:
            return (f"  {{ device float* o = O0 + ulong({r}) * n + col0 + tc * 4;\n"
                    f"    *(device float4*)o = {vals(0)}; *(device float4*)(o + 64) = {vals(4)}; }}\n")
        return (f"  {{ const uint r = {r};\n    if (r < m) {{\n"
                "      #pragma unroll\n"
                "      for (uint j = 0; j < 8; ++j) {\n"
                "        const uint c = col0 + (j < 4 ? tc * 4 + j : 64 + tc * 4 + j - 4);\n"
                f"        if (c < n) O0[ulong(r) * n + c] = acc[{i}][j];\n      }}\n    }}\n  }}\n")
    return (cache.header() +
            "kernel void mm(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],\n"
            "    device float* out [[buffer(2)]], constant uint& m [[buffer(3)]], constant uint& n [[buffer(4)]],\n"
            "    constant uint& k [[buffer(5)]],\n"
            "    uint3 gp [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {\n"
            f"  threadgroup float4 As[2][{BK}][{RA // 4}];\n  threadgroup float4 Bs[2][{BK}][{BN // 4}];\n"
            f"  const uint row0 = gp.y * {BM}, col0 = gp.x * {BN};\n"
            "  const device float* A0 = a + ulong(gp.z) * m * k;\n"
            "  const device float* B0 = b + ulong(gp.z) * k * n;\n"
            "  device float* O0 = out + ulong(gp.z) * m * n;\n"
            "  const uint tr = tid / 16, tc = tid % 16;\n"
            "  float acc[8][8];\n"
            "  #pragma unroll\n"
            "  for (uint i = 0; i < 8; ++i)\n"
            "    #pragma unroll\n"
            "    for (uint j = 0; j < 8; ++j) acc[i][j] = 0.0f;\n"
            f"  float4 ra[{per}], rb[{per}];\n"
            "  uint k0 = 0;\n"
            f"{setup()}"
            f"{loads()}"
            f"{to_tile('0')}"
            "  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
            "  uint cur = 0;\n"
            f"  for (k0 = {BK}; k0 < k + {BK}; k0 += {BK}) {{\n"
            "    const bool more = k0 < k;\n"
            "    if (more) {\n"
            f"{loads()}"
            "    }\n"
            f"    #pragma unroll{f' {unroll}' if unroll else ''}\n"
            f"    for (uint kk = 0; kk < {BK}; ++kk) {{\n"
            "      const float4 a0 = As[cur][kk][tr], a1 = As[cur][kk][16 + tr];\n"
            "      const float4 b0 = Bs[cur][kk][tc], b1 = Bs[cur][kk][16 + tc];\n"
            "      const float av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};\n"
            "      const float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};\n"
            "      #pragma unroll\n"
            "      for (uint i = 0; i < 8; ++i)\n"
            "        #pragma unroll\n"
            "        for (uint j = 0; j < 8; ++j) acc[i][j] += av[i] * bv[j];\n"
            "    }\n"
            "    if (more) {\n"
            f"{to_tile('cur ^ 1')}"
            "    }\n"
            "    threadgroup_barrier(mem_flags::mem_threadgroup);\n"
            "    cur ^= 1;\n"
            "  }\n"
            + "".join(store_row(i) for i in range(8)) +
            "}\n")
