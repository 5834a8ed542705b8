"""The elementwise operation table: for each operation, how its result dtype is found
(NumPy's own ufunc type resolution, so results match NumPy 2) and the MSL expression
it generates for given operand dtypes. Used by _fusion.py to write fused kernels.

Integer arithmetic goes through the unsigned type of the same (or int's) width so
overflow wraps as in NumPy and is never undefined behaviour in the generated C++.
Division and remainder by zero give 0 for integers (NumPy's values, without its warning)."""

from __future__ import annotations

import numpy as np

from . import _dtypes as D

# name -> (numpy ufunc for dtype resolution or None, number of operands, compute kind)
#   compute kind "result": operands are cast to the result dtype before the op
#   compute kind "common": operands are cast to their common dtype; the result is bool
OPS = {}


def _op(name, ufunc, nargs, kind="result"):
    OPS[name] = (ufunc, nargs, kind)


for _n, _u in [
    ("abs", np.abs), ("acos", np.arccos), ("acosh", np.arccosh), ("asin", np.arcsin), ("asinh", np.arcsinh),
    ("atan", np.arctan), ("atanh", np.arctanh), ("ceil", np.ceil), ("cos", np.cos), ("cosh", np.cosh),
    ("exp", np.exp), ("expm1", np.expm1), ("floor", np.floor), ("log", np.log), ("log1p", np.log1p),
    ("log2", np.log2), ("log10", np.log10), ("negative", np.negative), ("positive", np.positive),
    ("round", np.round), ("sign", np.sign), ("sin", np.sin), ("sinh", np.sinh), ("square", np.square),
    ("sqrt", np.sqrt), ("tan", np.tan), ("tanh", np.tanh), ("trunc", np.trunc), ("bitwise_invert", np.invert),
    ("exp2", np.exp2), ("rint", np.rint), ("reciprocal", np.reciprocal), ("cbrt", np.cbrt),
]:
    _op(_n, _u, 1)
for _n, _u in [("isfinite", np.isfinite), ("isinf", np.isinf), ("isnan", np.isnan), ("signbit", np.signbit),
               ("logical_not", np.logical_not)]:
    _op(_n, _u, 1, "common")
for _n, _u in [
    ("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply), ("divide", np.divide),
    ("floor_divide", np.floor_divide), ("remainder", np.remainder), ("pow", np.power), ("atan2", np.arctan2),
    ("copysign", np.copysign), ("hypot", np.hypot), ("logaddexp", np.logaddexp), ("maximum", np.maximum),
    ("minimum", np.minimum), ("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
    ("bitwise_xor", np.bitwise_xor), ("bitwise_left_shift", np.left_shift),
    ("bitwise_right_shift", np.right_shift), ("fmod", np.fmod), ("fmax", np.fmax), ("fmin", np.fmin),
    ("nextafter", np.nextafter),
]:
    _op(_n, _u, 2)
for _n, _u in [("equal", np.equal), ("not_equal", np.not_equal), ("less", np.less), ("less_equal", np.less_equal),
               ("greater", np.greater), ("greater_equal", np.greater_equal), ("logical_and", np.logical_and),
               ("logical_or", np.logical_or), ("logical_xor", np.logical_xor)]:
    _op(_n, _u, 2, "common")
_op("conj", np.conjugate, 1)
_op("real", np.real, 1)
_op("imag", np.imag, 1)
# Not ufuncs: resolved by _fusion (cast: the target dtype; where: the common dtype of x and y; clip: x's dtype;
# complex: two real parts into the complex dtype of the node).
OPS["cast"] = (None, 1, "result")
OPS["where"] = (None, 3, "result")
OPS["complex"] = (None, 2, "result")


# The complex operations' generator: _complex.py registers its expr here (it imports this module for the
# real helpers it calls; metalcall.numpy imports it before any kernel is generated).
COMPLEX = {}


def _bits(dt):
    return dt.itemsize * 8


def wide_unsigned(dt):
    """The unsigned type integer arithmetic of dt is done in (C promotes smaller types to int)."""
    return "ulong" if dt.itemsize == 8 else "uint"


class Gen:
    """Collects helper functions a generated kernel needs and spells math calls per backend."""

    def __init__(self, backend: str):
        self.backend = backend
        self.helpers: dict = {}

    def helper(self, name: str, code: str) -> str:
        self.helpers.setdefault(name, code)
        return name

    def fn(self, name: str, dt, *args: str) -> str:
        """A math function call on float dtype dt, spelt in MSL only (the front end refuses
        anything else). float64 uses the CPU/CUDA prelude's double overloads of MSL's names;
        expm1, log1p, hypot and cbrt, which MSL lacks, are helpers written in MSL."""
        a = ", ".join(args)
        if name in ("expm1", "log1p", "hypot", "cbrt"):
            t = D.msl(dt)
            w = "double" if dt == D.float64 else "float"
            fa = ", ".join(f"{w}({x})" for x in args)
            helper = self.helper(f"mnp_{name}_{w}", _METAL_HELPERS[name].replace("FT", w))
            return f"{t}({helper}({fa}))"
        if dt == D.float64:
            return f"{name}({a})"
        if self.backend == "cpu" and name in ("exp", "log", "tanh") and dt in (D.float32, D.float16):
            self.helper("mnp_exp", _CPU_EXP)  # tanh uses it
            return f"{D.msl(dt)}({self.helper('mnp_' + name, _CPU_FUNCS[name])}(float({args[0]})))"
        if self.backend == "cpu" and name in ("sin", "cos") and dt in (D.float32, D.float16):
            t = D.msl(dt)
            return f"{t}({self.helper('mnp_sincos', _cpu_sincos())}(float({args[0]}), {int(name == 'cos')}))"
        return f"{name}({a})"


# MSL has no expm1, log1p, hypot or cbrt; FT is float or double (the CPU/CUDA extension).
_METAL_HELPERS = {
    "expm1": "inline FT mnp_expm1_FT(FT x) { FT u = exp(x); if (u == FT(1)) return x; "
    "FT m = u - FT(1); if (m == FT(-1)) return FT(-1); if (isinf(u)) return u; return m * x / log(u); }",
    "log1p": "inline FT mnp_log1p_FT(FT x) { FT u = FT(1) + x; if (u == FT(1)) return x; "
    "if (u == FT(INFINITY)) return u; return log(u) * x / (u - FT(1)); }",
    "hypot": "inline FT mnp_hypot_FT(FT a, FT b) { a = fabs(a); b = fabs(b); if (isinf(a) || isinf(b)) "
    "return FT(INFINITY); if (isnan(a) || isnan(b)) return a + b; FT m = fmax(a, b), n = fmin(a, b); "
    "if (m == FT(0)) return m + n; "
    "FT r = n / m; return m * sqrt(FT(1) + r * r); }",
    "cbrt": "inline FT mnp_cbrt_FT(FT x) { if (x == FT(0) || isinf(x) || isnan(x)) return x; "
    "FT r = pow(fabs(x), FT(1) / FT(3)); r = r - (r * r * r - fabs(x)) / (FT(3) * r * r); return copysign(r, x); }",
}


# 2/pi in 24-bit chunks (fdlibm's ipio2; checked against 2/pi computed to 120 digits).
_TWO_OVER_PI_24 = (0xA2F983, 0x6E4E44, 0x1529FC, 0x2757D1, 0xF534DD, 0xC0DB62, 0x95993C, 0x439041, 0xFE5163,
                   0xABDEBB)


def _cpu_sincos() -> str:
    """float sin/cos for the CPU backend as plain arithmetic the C++ compiler vectorises (libm's
    sinf is a scalar call per element: 4x slower here, and slower than NumPy's SIMD sin).
    Argument reduction is exact for every float: |x| times each 24-bit chunk of 2/pi is exact in
    double, and each product is taken modulo 4 exactly, so their sum is (|x| * 2/pi) mod 4 to
    ~2^-50; Cephes' minimax polynomials on [-pi/4, pi/4] finish (about 1 ulp)."""
    terms = "".join(
        f"  {{ double p = x * {c * 2.0 ** (-24 * (k + 1))!r}; s += p - 4.0 * floor(p * 0.25); }}\n"
        for k, c in enumerate(_TWO_OVER_PI_24))
    return ("inline float mnp_sincos(float xf, int want_cos) {\n"
            "  double x = double(fabs(xf)), s = 0.0;\n" + terms +
            "  s -= 4.0 * floor(s * 0.25);\n"
            "  double j = rint(s);\n"
            "  float r = float((s - j) * 1.5707963267948966);\n"
            "  long q = long(j) + want_cos;\n"
            "  float z = r * r;\n"
            "  float sn = r + r * z * (-1.6666654611e-1f + z * (8.3321608736e-3f + z * -1.9515295891e-4f));\n"
            "  float cs = 1.0f - 0.5f * z + z * z * (4.166664568298827e-2f + z * (-1.388731625493765e-3f"
            " + z * 2.443315711809948e-5f));\n"
            "  float v = (q & 1) ? cs : sn;\n"
            "  v = (q & 2) ? -v : v;\n"
            "  return (want_cos == 0 && signbit(xf)) ? -v : v;  // sin is odd: sin(-0) is -0\n}")


# float exp for the CPU backend, vectorisable like mnp_sincos: Cody-Waite reduction by ln 2 and
# Cephes' expf polynomial; 2^k is applied in two exact steps so results reach the subnormals.
_CPU_EXP = """inline float mnp_exp(float x) {
  float k = rint(x * 1.44269504088896341f);
  k = (k != k) ? 0.0f : fmin(fmax(k, -160.0f), 160.0f);
  float r = (x - k * 0.693359375f) - k * -2.12194440e-4f;
  float z = r * r;
  float p = (((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r + 4.1665795894e-2f) * r
             + 1.6666665459e-1f) * r + 5.0000001201e-1f) * z + r + 1.0f;
  int ki = int(k), k1 = ki / 2, k2 = ki - k1;
  float v = p * as_type<float>((k1 + 127) << 23) * as_type<float>((k2 + 127) << 23);
  v = x > 88.72283905206835f ? INFINITY : v;
  v = x < -103.97208f ? 0.0f : v;
  return x != x ? x : v;
}"""


# log: x = m 2^e with m in [sqrt(1/2), sqrt(2)) read from the bits (subnormals scaled first), then
# Cephes' logf polynomial. tanh: Cephes' odd polynomial below 0.625, 1 - 2 / (exp(2|x|) + 1) above.
_CPU_LOG = """inline float mnp_log(float x) {
  bool sub = x < 1.17549435e-38f;
  float xs = sub ? x * 16777216.0f : x;
  int bits = as_type<int>(xs);
  int e = ((bits >> 23) & 0xff) - 127 - (sub ? 24 : 0);
  float m = as_type<float>((bits & 0x7fffff) | 0x3f800000);
  bool big = m > 1.41421356f;
  m = big ? m * 0.5f : m;
  float fe = float(big ? e + 1 : e);
  float f = m - 1.0f, z = f * f;
  float y = ((((((((7.0376836292e-2f * f - 1.1514610310e-1f) * f + 1.1676998740e-1f) * f - 1.2420140846e-1f) * f
            + 1.4249322787e-1f) * f - 1.6668057665e-1f) * f + 2.0000714765e-1f) * f - 2.4999993993e-1f) * f
            + 3.3333331174e-1f) * f * z;
  y += -2.12194440e-4f * fe;
  y += -0.5f * z;
  float v = f + y + 0.693359375f * fe;
  v = x == 0.0f ? -INFINITY : v;
  v = x == INFINITY ? x : v;
  return (x < 0.0f || x != x) ? NAN : v;
}"""
_CPU_TANH = """inline float mnp_tanh(float x) {
  float a = fabs(x), z = x * x;
  float p = x + x * z * ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z
            + 1.33314422036e-1f) * z - 3.33332819422e-1f);
  float t = 1.0f - 2.0f / (mnp_exp(2.0f * fmin(a, 20.0f)) + 1.0f);
  t = copysign(t, x);
  return (a < 0.625f) ? (x == 0.0f ? x : p) : ((x != x) ? x : t);  // tanh(-0) is -0
}"""
_CPU_FUNCS = {"exp": _CPU_EXP, "log": _CPU_LOG, "tanh": _CPU_TANH}


def _cpu_small_division(g: Gen, t: str, signed: bool) -> str:
    """floor_divide (rem 0) or remainder (rem 1) of integers of at most 32 bits on the CPU, through
    double: x86 has no vector integer division, and a kernel of `x // 7` over 1e6 int32 ran one
    hardware division an element (1.5 ms; NumPy, which divides by a multiplication for a scalar
    divisor, 0.2). The double quotient of two such integers is never within 2^-31 of the next
    integer below its true value (it is a multiple of 1/|y| away), far more than double's 2^-53
    rounding, so its floor is exact. Division by zero gives 0 (NumPy's value, without its
    warning); MIN // -1 wraps to MIN, MIN % -1 is 0, as NumPy's."""
    name = f"mnp_intdiv_{t}"
    return g.helper(name,
                    f"inline {t} {name}({t} x, {t} y, int rem) {{\n"
                    f"  const double d = double(y == {t}(0) ? {t}(1) : y);\n"
                    f"  const long q = long({'floor' if signed else 'trunc'}(double(x) / d));\n"
                    "  const long r = long(x) - q * long(y);\n"
                    f"  return y == {t}(0) ? {t}(0) : {t}(rem ? r : q);\n}}")


def _int_pow_helper(g: Gen, dt) -> str:
    t, w = D.msl(dt), wide_unsigned(dt)
    neg = ""
    if dt.kind == "i":
        neg = f"if (b < 0) return a == 1 ? {t}(1) : (a == -1 ? ((b & 1) ? {t}(-1) : {t}(1)) : {t}(0)); "
    name = f"mnp_pow_{t}"
    code = (f"inline {t} {name}({t} a, {t} b) {{ {neg}{w} r = 1, x = {w}(a); ulong e = ulong(b); "
            f"while (e) {{ if (e & 1) r *= x; x *= x; e >>= 1; }} return {t}(r); }}")
    return g.helper(name, code)


def expr(g: Gen, op: str, dt, a: list, rdt=None) -> str:
    """The MSL expression of `op` on operand expressions `a` (already of dtype dt, the compute dtype).
    rdt is the result dtype (differs from dt for predicates and casts)."""
    if dt.kind == "c" or (rdt is not None and rdt.kind == "c"):
        return COMPLEX["expr"](g, op, dt, a, rdt)
    t = D.msl(dt)
    f, i, u, b = dt.kind == "f", dt.kind == "i", dt.kind == "u", dt.kind == "b"
    x = a[0]
    y = a[1] if len(a) > 1 else None
    w = wide_unsigned(dt) if (i or u) else None

    def arith(sym):
        if i or u:
            return f"{t}({w}({x}) {sym} {w}({y}))"
        return f"{t}({x} {sym} {y})"

    if dt == D.float16 and op in ("floor_divide", "remainder", "logaddexp"):
        # Computed in float and rounded once, as NumPy does for float16 (and CUDA's half
        # has no unambiguous comparison with an int literal).
        return f"{t}({expr(g, op, D.float32, [f'float({x})', f'float({y})'])})"
    if op == "cast":
        if rdt == D.bool_:
            return f"bool({x} != {t}(0))" if not b else x
        return f"{D.msl(rdt)}({x})"
    if op in ("positive", "conj", "real"):
        return x
    if op == "imag":
        return f"{t}(0)"
    if op == "abs":
        if f:
            return f"{t}({g.fn('fabs', dt, x)})"
        if i:
            return f"{t}({x} < 0 ? {w}(0) - {w}({x}) : {w}({x}))"
        return x
    if op == "negative":
        return f"{t}({w}(0) - {w}({x}))" if (i or u) else f"{t}(-{x})"
    if op == "square":
        return f"{t}({w}({x}) * {w}({x}))" if (i or u) else f"{t}({x} * {x})"
    if op == "sign":
        if f:
            # +-0 gives +0 as NumPy (returning x would keep -0); NaN gives x (NaN)
            return f"{t}({x} > {t}(0) ? {t}(1) : ({x} < {t}(0) ? {t}(-1) : ({x} == {t}(0) ? {t}(0) : {x})))"
        if i:
            return f"{t}(({x} > 0) - ({x} < 0))"
        return f"{t}({x} > 0)"
    if op in ("ceil", "floor", "trunc", "round", "rint"):
        if not f:
            return x
        name = "rint" if op in ("round", "rint") else op
        return f"{t}({g.fn(name, dt, x)})"
    if op == "reciprocal":
        if f:
            return f"{t}({t}(1) / {x})"
        return f"{t}({x} == 0 ? {t}(0) : {t}(1) / {x})"
    if op in ("acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "exp", "expm1", "log", "log1p",
              "log2", "log10", "sin", "sinh", "sqrt", "tan", "tanh", "exp2", "cbrt"):
        return f"{t}({g.fn(op, dt, x)})"
    if op == "bitwise_invert":
        return f"!{x}" if b else f"{t}(~{x})"
    if op == "isnan":
        return f"({x} != {x})" if f else "false"
    if op == "isinf":
        return f"({x} == {x} && ({x} - {x}) != ({x} - {x}))" if f else "false"
    if op == "isfinite":
        return f"(({x} - {x}) == ({x} - {x}))" if f else "true"
    if op == "signbit":
        if not f:
            return f"({x} < 0)" if i else "false"
        if dt == D.float64:
            return f"((as_type<ulong>({x}) >> 63) != 0)"
        return f"bool(signbit({x}))"
    if op == "logical_not":
        return f"!bool({x})"
    # ---- binary ----
    if op == "add":
        return f"({x} || {y})" if b else arith("+")
    if op == "subtract":
        return arith("-")
    if op == "multiply":
        return f"({x} && {y})" if b else arith("*")
    if op == "divide":
        return f"{t}({x} / {y})"
    if op == "floor_divide":
        if f:
            fl = g.fn("floor", dt, "d")
            fm = g.fn("fmod", dt, "x", "y")
            cs = g.fn("copysign", dt, t + "(0)", "x / y")
            h = g.helper(f"mnp_floordiv_{t}",
                         # an infinite (or NaN) operand: floor(x / y) is x / y (the array API 2024.12;
                         # NumPy's divmod gives NaN for inf // 1 and -1 for 1 // -inf)
                         f"inline {t} mnp_floordiv_{t}({t} x, {t} y) {{ if (y == 0) return x / y; "
                         f"if ((x - x) != (x - x) || (y - y) != (y - y)) return x / y; {t} m = {fm}; "
                         f"{t} d = (x - m) / y; if (m != 0 && ((y < 0) != (m < 0))) d -= 1; "
                         f"if (d == 0) return {cs}; {t} r = {fl}; if (d - r > {t}(0.5)) r += 1; return r; }}")
            return f"{h}({x}, {y})"
        if b:
            return f"bool({x} && {y})"
        if g.backend == "cpu" and dt.itemsize <= 4:
            return f"{_cpu_small_division(g, t, i)}({x}, {y}, 0)"
        if u:
            return f"{t}({y} == 0 ? {t}(0) : {t}({x} / {y}))"
        h = g.helper(f"mnp_floordiv_{t}",
                     f"inline {t} mnp_floordiv_{t}({t} x, {t} y) {{ if (y == 0) return 0; "
                     f"if (y == -1) return {t}({w}(0) - {w}(x)); {t} q = x / y; "
                     f"if ((x % y != 0) && ((x < 0) != (y < 0))) q -= 1; return q; }}")
        return f"{h}({x}, {y})"
    if op == "remainder":
        if f:
            fm = g.fn("fmod", dt, "x", "y")
            cs = g.fn("copysign", dt, t + "(0)", "y")
            h = g.helper(f"mnp_rem_{t}",
                         f"inline {t} mnp_rem_{t}({t} x, {t} y) {{ {t} m = {fm}; if (y == 0) return m; "
                         f"if (m != 0) {{ if ((y < 0) != (m < 0)) m += y; }} else m = {cs}; return m; }}")
            return f"{h}({x}, {y})"
        if g.backend == "cpu" and dt.itemsize <= 4 and not b:
            return f"{_cpu_small_division(g, t, i)}({x}, {y}, 1)"
        if u or b:
            return f"{t}({y} == 0 ? {t}(0) : {t}({x} % {y}))"
        h = g.helper(f"mnp_rem_{t}",
                     f"inline {t} mnp_rem_{t}({t} x, {t} y) {{ if (y == 0 || y == -1) return 0; {t} r = x % y; "
                     f"if (r != 0 && ((r < 0) != (y < 0))) r += y; return r; }}")
        return f"{h}({x}, {y})"
    if op == "fmod":
        if f:
            return f"{t}({g.fn('fmod', dt, x, y)})"
        if u:
            return f"{t}({y} == 0 ? {t}(0) : {t}({x} % {y}))"
        return f"{t}(({y} == 0 || {y} == -1) ? {t}(0) : {t}({x} % {y}))"
    if op == "pow":
        if f:
            return f"{t}({g.fn('pow', dt, x, y)})"
        if b:
            return f"bool({x} || !{y})"
        return f"{_int_pow_helper(g, dt)}({x}, {y})"
    if op == "nextafter":  # float dtypes only (NumPy resolves integers to float64)
        ut = {2: "ushort", 4: "uint", 8: "ulong"}[dt.itemsize]
        sign = f"({ut}(1) << {_bits(dt) - 1})"
        h = g.helper(f"mnp_nextafter_{t}",
                     f"inline {t} mnp_nextafter_{t}({t} x, {t} y) {{ if (x != x || y != y) return x + y; "
                     f"if (x == y) return y; "
                     # from +-0: the smallest subnormal with y's sign
                     f"if (x == {t}(0)) return as_type<{t}>({ut}(({ut}(1)) | (as_type<{ut}>(y) & {sign}))); "
                     # away from zero is one more in the magnitude bits, towards zero one less
                     f"{ut} b = as_type<{ut}>(x); if ((x < y) == (x > {t}(0))) b += 1; else b -= 1; "
                     f"return as_type<{t}>(b); }}")
        return f"{h}({x}, {y})"
    if op in ("atan2", "copysign", "hypot"):
        return f"{t}({g.fn(op, dt, x, y)})"
    if op == "logaddexp":
        ex = g.fn("exp", dt, "-(d < 0 ? -d : d)")
        lp = g.fn("log1p", dt, ex)
        h = g.helper(f"mnp_logaddexp_{t}",
                     f"inline {t} mnp_logaddexp_{t}({t} x, {t} y) {{ if (x == y) return x + {t}(0.693147180559945309); "
                     f"{t} d = x - y; if (d != d) return d; {t} m = x > y ? x : y; return m + {t}({lp}); }}")
        return f"{h}({x}, {y})"
    if op in ("maximum", "minimum", "fmax", "fmin"):
        cmp = ">" if op in ("maximum", "fmax") else "<"
        if not f:
            return f"({x} {cmp} {y} ? {x} : {y})"
        if op in ("maximum", "minimum"):  # NaN propagates
            return f"(({x} != {x}) || {x} {cmp} {y} ? {x} : {y})"
        return f"(({y} != {y}) || {x} {cmp} {y} ? {x} : {y})"  # fmax/fmin ignore NaN
    if op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        sym = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}[op]
        if b:
            return f"bool({x} {sym} {y})"
        return f"{t}({x} {sym} {y})"
    if op == "bitwise_left_shift":
        return f"{t}(({y} < 0 || {y} >= {_bits(dt)}) ? {t}(0) : {t}({w}({x}) << {w}({y})))"
    if op == "bitwise_right_shift":
        if i:
            return f"{t}(({y} < 0 || {y} >= {_bits(dt)}) ? ({x} < 0 ? {t}(-1) : {t}(0)) : {t}({x} >> {y}))"
        return f"{t}(({y} >= {_bits(dt)}) ? {t}(0) : {t}({x} >> {y}))"
    cmpops = {"equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">",
              "greater_equal": ">="}
    if op in cmpops:
        return f"({x} {cmpops[op]} {y})"
    if op == "logical_and":
        return f"(bool({x}) && bool({y}))"
    if op == "logical_or":
        return f"(bool({x}) || bool({y}))"
    if op == "logical_xor":
        return f"(bool({x}) != bool({y}))"
    # ---- ternary ----
    if op == "where":
        return f"({a[0]} ? {a[1]} : {a[2]})"
    raise NotImplementedError(op)
