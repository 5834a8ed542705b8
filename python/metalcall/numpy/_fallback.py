"""FALLBACK kernels (simple, one thread per output row) with the same buffer-level interface as
metalcall.numpy._kernels (branch p14-kern: SIMD-group reductions, tiled matmul, Philox random).
_backend.py uses these only while _kernels is absent; the lead may delete this file once both
branches are merged. (outer, n, inner): the C-contiguous input viewed with the reduced/scanned/
sorted axis of length n in the middle."""

from __future__ import annotations

import numpy as np

from . import _dtypes as D
from . import _runtime as R

_HEAD = "#include <metal_stdlib>\nusing namespace metal;\n"


def _acc(dt):
    return "float" if dt == D.float16 else D.msl(dt)


def _params(dev, *vals):
    return dev.asarray(np.array(vals, dtype=np.int64))


def _combine(op, dt):
    t = D.msl(dt)
    if op == "sum":
        return "acc = acc + v;" if dt.kind == "f" else f"acc = {t}(ulong(acc) + ulong(v));"
    if op == "prod":
        return "acc = acc * v;" if dt.kind == "f" else f"acc = {t}(ulong(acc) * ulong(v));"
    if op == "max":
        return "if (v != v || v > acc) acc = v;" if dt.kind == "f" else "if (v > acc) acc = v;"
    if op == "min":
        return "if (v != v || v < acc) acc = v;" if dt.kind == "f" else "if (v < acc) acc = v;"
    if op == "any":
        return "acc = acc || v;"
    if op == "all":
        return "acc = acc && v;"
    raise ValueError(op)


def reduce(dev, src, dtype, outer, n, inner, op, out_dtype):
    out = dev.empty(outer * inner, out_dtype)
    if outer * inner == 0:
        return out
    if n == 0:
        src = dev.empty(1, dtype)  # a buffer must have an element to bind; the loop reads none
    t, o = D.msl(dtype), D.msl(out_dtype)
    if op in ("argmin", "argmax"):
        cmp = ">" if op == "argmax" else "<"
        nan = "if (best != best) break; if (v != v) { best = v; bi = k; break; }" if dtype.kind == "f" else ""
        body = (f"  {t} best = p[0]; long bi = 0;\n"
                f"  for (long k = 0; k < n; ++k) {{ {t} v = p[k * inner]; {nan} if (v {cmp} best) {{ best = v; bi = k; }} }}\n"
                f"  out[gid] = bi;")
    else:
        a = "bool" if op in ("any", "all") else _acc(out_dtype)
        init = {"sum": "0", "prod": "1", "any": "false", "all": "true"}.get(op, "p[0]")
        comb = _combine(op, D.bool_ if a == "bool" else (D.float32 if a == "float" else out_dtype))
        conv = "bool(p[k * inner] != 0)" if a == "bool" else f"{a}(p[k * inner])"
        body = (f"  {a} acc = {a}({init});\n"
                f"  for (long k = 0; k < n; ++k) {{ {a} v = {conv}; {comb} }}\n"
                f"  out[gid] = {o}(acc);")
    src_text = (_HEAD + f"kernel void mnp_fb_reduce(device const {t}* src [[buffer(0)]], constant long* P [[buffer(1)]],\n"
                f"    device {o}* out [[buffer(2)]], uint gid [[thread_position_in_grid]]) {{\n"
                "  long n = P[0], inner = P[1];\n"
                "  device const " + t + "* p = src + (gid / ulong(inner)) * ulong(n) * ulong(inner) + gid % ulong(inner);\n"
                + body + "\n}\n")
    R.launch(R.kernel(dev, src_text, "mnp_fb_reduce"), outer * inner, src, _params(dev, n, inner), out)
    return out


def moments(dev, src, dtype, outer, n, inner, correction, out_dtype):
    mean = dev.empty(outer * inner, out_dtype)
    var = dev.empty(outer * inner, out_dtype)
    if outer * inner == 0:
        return mean, var
    if n == 0:
        src = dev.empty(1, dtype)
    t, o, a = D.msl(dtype), D.msl(out_dtype), _acc(out_dtype)
    text = (_HEAD + f"kernel void mnp_fb_moments(device const {t}* src [[buffer(0)]], constant long* P [[buffer(1)]],\n"
            f"    constant {a}& corr [[buffer(2)]], device {o}* mean [[buffer(3)]], device {o}* var [[buffer(4)]],\n"
            "    uint gid [[thread_position_in_grid]]) {\n"
            "  long n = P[0], inner = P[1];\n"
            f"  device const {t}* p = src + (gid / ulong(inner)) * ulong(n) * ulong(inner) + gid % ulong(inner);\n"
            f"  {a} s = 0; for (long k = 0; k < n; ++k) s += {a}(p[k * inner]);\n"
            f"  {a} m = s / {a}(n); {a} q = 0;\n"
            f"  for (long k = 0; k < n; ++k) {{ {a} d = {a}(p[k * inner]) - m; q += d * d; }}\n"
            f"  mean[gid] = {o}(m); var[gid] = {o}(q / ({a}(n) - corr));\n}}\n")
    corr = np.array(correction, dtype=np.float32 if a == "float" else out_dtype).tobytes()
    R.launch(R.kernel(dev, text, "mnp_fb_moments"), outer * inner, src, _params(dev, n, inner), corr, mean, var)
    return mean, var


def cumsum(dev, src, dtype, outer, n, inner, out_dtype):
    out = dev.empty(outer * n * inner, out_dtype)
    if outer * inner * n == 0:
        return out
    t, o = D.msl(dtype), D.msl(out_dtype)
    a = _acc(out_dtype)
    add = "acc = acc + v;" if out_dtype.kind == "f" else f"acc = {o}(ulong(acc) + ulong(v));"
    text = (_HEAD + f"kernel void mnp_fb_cumsum(device const {t}* src [[buffer(0)]], constant long* P [[buffer(1)]],\n"
            f"    device {o}* out [[buffer(2)]], uint gid [[thread_position_in_grid]]) {{\n"
            "  long n = P[0], inner = P[1];\n"
            "  ulong base = (gid / ulong(inner)) * ulong(n) * ulong(inner) + gid % ulong(inner);\n"
            f"  {a} acc = 0;\n"
            f"  for (long k = 0; k < n; ++k) {{ {a} v = {a}(src[base + k * inner]); {add} out[base + k * inner] = {o}(acc); }}\n}}\n")
    R.launch(R.kernel(dev, text, "mnp_fb_cumsum"), outer * inner, src, _params(dev, n, inner), out)
    return out


def matmul(dev, a, b, batch, m, n, k, dtype):
    out = dev.empty(batch * m * n, dtype)
    if batch * m * n == 0:
        return out
    t = D.msl(dtype)
    acc = _acc(dtype) if dtype.kind == "f" else "ulong"
    text = (_HEAD + f"kernel void mnp_fb_matmul(device const {t}* A [[buffer(0)]], device const {t}* B [[buffer(1)]],\n"
            f"    constant long* P [[buffer(2)]], device {t}* C [[buffer(3)]], uint gid [[thread_position_in_grid]]) {{\n"
            "  ulong m = P[0], n = P[1], k = P[2];\n"
            "  ulong j = gid % n, i = (gid / n) % m, b = gid / (n * m);\n"
            f"  device const {t}* a = A + (b * m + i) * k; device const {t}* bb = B + b * k * n + j;\n"
            f"  {acc} s = 0;\n"
            f"  for (ulong q = 0; q < k; ++q) s += {acc}(a[q]) * {acc}(bb[q * n]);\n"
            f"  C[gid] = {t}(s);\n}}\n")
    R.launch(R.kernel(dev, text, "mnp_fb_matmul"), batch * m * n, a, b, _params(dev, m, n, k), out)
    return out


def _sort_impl(dev, src, dtype, outer, n, descending, want_indices):
    vals = dev.empty(outer * n, dtype)
    idx = dev.empty(outer * n, np.int64)
    if outer * n == 0:
        return idx if want_indices else vals
    tmpv = dev.empty(outer * n, dtype)
    tmpi = dev.empty(outer * n, np.int64)
    t = D.msl(dtype)
    lt = "(a < b || (b != b && a == a))" if dtype.kind == "f" else "(a < b)"
    text = (_HEAD + f"inline bool mnp_lt({t} a, {t} b) {{ return {lt}; }}\n"
            f"kernel void mnp_fb_sort(device const {t}* src [[buffer(0)]], constant long* P [[buffer(1)]],\n"
            f"    device {t}* V [[buffer(2)]], device long* I [[buffer(3)]], device {t}* TV [[buffer(4)]],\n"
            "    device long* TI [[buffer(5)]], uint gid [[thread_position_in_grid]]) {\n"
            "  long n = P[0]; bool desc = P[1] != 0; ulong base = ulong(gid) * ulong(n);\n"
            f"  device {t}* v = V + base; device long* ix = I + base; device {t}* tv = TV + base; device long* ti = TI + base;\n"
            "  for (long k = 0; k < n; ++k) { v[k] = src[base + k]; ix[k] = k; }\n"
            "  for (long w = 1; w < n; w *= 2) {\n"
            "    for (long lo = 0; lo < n; lo += 2 * w) {\n"
            "      long mid = min(lo + w, n), hi = min(lo + 2 * w, n), a = lo, b = mid, o = lo;\n"
            "      while (a < mid && b < hi) {\n"
            "        bool takeb = desc ? mnp_lt(v[a], v[b]) : mnp_lt(v[b], v[a]);\n"
            "        if (takeb) { tv[o] = v[b]; ti[o++] = ix[b++]; } else { tv[o] = v[a]; ti[o++] = ix[a++]; }\n"
            "      }\n"
            "      while (a < mid) { tv[o] = v[a]; ti[o++] = ix[a++]; }\n"
            "      while (b < hi) { tv[o] = v[b]; ti[o++] = ix[b++]; }\n"
            "    }\n"
            "    for (long k = 0; k < n; ++k) { v[k] = tv[k]; ix[k] = ti[k]; }\n"
            "  }\n}\n")
    R.launch(R.kernel(dev, text, "mnp_fb_sort"), outer, src, _params(dev, n, int(bool(descending))),
             vals, idx, tmpv, tmpi)
    return idx if want_indices else vals


def sort(dev, src, dtype, outer, n, descending=False):
    return _sort_impl(dev, src, dtype, outer, n, descending, False)


def argsort(dev, src, dtype, outer, n, descending=False):
    return _sort_impl(dev, src, dtype, outer, n, descending, True)


# Random numbers: a splitmix64 hash of (seed, counter + i). Counter-based like Philox (the
# _kernels version), but NOT the same stream: tests must not hard-code values.
_MIX = ("inline ulong mnp_mix(ulong seed, ulong c) { ulong z = seed * 0x9E3779B97F4A7C15ul + c + 0x632BE59BD9B4E019ul;\n"
        "  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ul; z = (z ^ (z >> 27)) * 0x94D049BB133111EBul; return z ^ (z >> 31); }\n")


def _rand(dev, name, body, out_dtype, count, *extra):
    out = dev.empty(count, out_dtype)
    if count == 0:
        return out
    o = D.msl(out_dtype)
    text = (_HEAD + _MIX + f"kernel void {name}(constant long* P [[buffer(0)]], device {o}* out [[buffer(1)]],\n"
            "    uint gid [[thread_position_in_grid]]) {\n  ulong seed = ulong(P[0]), c = ulong(P[1]) + gid;\n"
            + body.replace("OUT", o) + "\n}\n")
    R.launch(R.kernel(dev, text, name), count, _params(dev, *extra), out)
    return out


def uniform(dev, seed, counter, count, dtype):
    body = ("  ulong z = mnp_mix(seed, c);\n"
            + ("  out[gid] = OUT(double(z >> 11) * 0x1.0p-53);" if dtype == D.float64 else
               "  out[gid] = OUT(float(z >> 40) * 0x1.0p-24f);"))
    return _rand(dev, "mnp_fb_uniform", body, dtype, count, seed, counter)


def normal(dev, seed, counter, count, dtype):
    f = "double" if dtype == D.float64 else "float"
    body = ("  ulong z1 = mnp_mix(seed, 2 * c), z2 = mnp_mix(seed, 2 * c + 1);\n"
            f"  {f} u1 = ({f}(z1 >> 40) + 1) * {f}(0x1.0p-24), u2 = {f}(z2 >> 40) * {f}(0x1.0p-24);\n"
            + ("  out[gid] = OUT(__builtin_sqrt(-2.0 * __builtin_log(u1)) * __builtin_cos(6.283185307179586 * u2));"
               if dtype == D.float64 and dev.backend == "cpu" else
               "  out[gid] = OUT(sqrt(-2.0f * log(float(u1))) * cos(6.2831853f * float(u2)));"))
    return _rand(dev, "mnp_fb_normal", body, dtype, count, seed, counter)


def integers(dev, seed, counter, count, low, high, dtype):
    body = ("  ulong z = mnp_mix(seed, c); ulong span = ulong(P[3] - P[2]);\n"
            "  out[gid] = OUT(long(P[2]) + long(span == 0 ? 0 : z % span));")
    return _rand(dev, "mnp_fb_integers", body, dtype, count, seed, counter, int(low), int(high))
