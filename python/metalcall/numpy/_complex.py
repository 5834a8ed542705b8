"""Complex arithmetic in the generated MSL: complex64 is `struct mnp_c64 { float re, im; }` and
complex128 `struct mnp_c128 { double re, im; }` (MSL has no complex type and the prelude none;
a struct is also what metalcall binds NumPy's complex buffers to). _dtypes.declare_types puts the
structs into every source that names them; this module writes the functions an expression needs
(each a helper of _ops.Gen, with the helpers it calls registered first).

The functions follow the array API's special cases for complex arguments (C99 Annex G: branch
cuts, signed zeros, infinities, NaN): non-finite arguments are answered from the standard's
tables, finite ones by formulas that keep accuracy and avoid overflow (W. Kahan, "Branch cuts
for complex elementary functions", 1987, for the inverse functions). Multiplication, division
and integer powers are NumPy's (naive product, Smith's division, repeated squaring), so values
match NumPy's."""

from __future__ import annotations

from . import _dtypes as D
from . import _ops

ComplexError = D.ComplexError

# Per complex dtype: the struct, its real type and the constants the formulas scale by.
_TYPES = {
    D.complex64: {"@C": "mnp_c64", "@F": "float", "@P": "mnp_c64_", "@QMAX": "8.50705917e+37",
                  "@TINY": "4.70197740e-38", "@UP": "16777216.0", "@UPR": "0.000244140625", "@EOVF": "88.0",
                  "@TBIG": "12.0", "@HUGE": "1e18", "@SMALL": "1e-15", "@UP2": "18446744073709551616.0"},
    D.complex128: {"@C": "mnp_c128", "@F": "double", "@P": "mnp_c128_", "@QMAX": "4.4942328371557893e+307",
                   "@TINY": "8.9002954340288055e-308", "@UP": "18014398509481984.0",
                   "@UPR": "7.450580596923828125e-9", "@EOVF": "709.0", "@TBIG": "22.0", "@HUGE": "1e150", "@SMALL": "1e-140",
                   "@UP2": "3.273390607896141870e+150"},
}
_PI = "@F(3.14159265358979323846)"
_PI2 = "@F(1.57079632679489661923)"
_PI4 = "@F(0.78539816339744830962)"
_INF = "@F(INFINITY)"
_NAN = "@F(NAN)"

# name -> (helpers it calls, MSL text). @P prefixes every name; x, y are the real and imaginary parts.
_LIB = {
    "mk": ((), "inline @C @Pmk(@F r, @F i) { @C z; z.re = r; z.im = i; return z; }"),
    "cls": ((), "inline bool @Pisnan(@F x) { return x != x; }\n"
                "inline bool @Pisinf(@F x) { return x == x && (x - x) != (x - x); }\n"
                "inline bool @Pisfin(@F x) { return (x - x) == (x - x); }\n"
                "inline bool @Pneg(@F x) { return copysign(@F(1), x) < @F(0); }"),
    "add": (("mk",), "inline @C @Padd(@C a, @C b) { return @Pmk(a.re + b.re, a.im + b.im); }"),
    "sub": (("mk",), "inline @C @Psub(@C a, @C b) { return @Pmk(a.re - b.re, a.im - b.im); }"),
    "mul": (("mk",), "inline @C @Pmul(@C a, @C b) { return @Pmk(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re); }"),
    # Smith's algorithm (NumPy's): scale by the larger part of the divisor; 0 divisors give inf/NaN.
    "div": (("mk",), """inline @C @Pdiv(@C a, @C b) {
  @F ar = fabs(b.re), ai = fabs(b.im);
  if (ar >= ai) {
    if (ar == @F(0) && ai == @F(0)) return @Pmk(a.re / ar, a.im / ar);
    @F rat = b.im / b.re, scl = @F(1) / (b.re + b.im * rat);
    return @Pmk((a.re + a.im * rat) * scl, (a.im - a.re * rat) * scl);
  }
  @F rat = b.re / b.im, scl = @F(1) / (b.im + b.re * rat);
  return @Pmk((a.re * rat + a.im) * scl, (a.im * rat - a.re) * scl);
}"""),
    "sqrt": (("mk", "cls", "hypot"), f"""inline @C @Psqrt(@C z) {{
  @F x = z.re, y = z.im;
  if (x == @F(0) && y == @F(0)) return @Pmk(@F(0), y);
  if (@Pisinf(y)) return @Pmk({_INF}, y);
  if (@Pisnan(x)) return @Pmk(x, {_NAN});
  if (@Pisinf(x)) {{
    if (@Pisnan(y)) return x > @F(0) ? @Pmk(x, y) : @Pmk(y, {_INF});
    return x > @F(0) ? @Pmk(x, copysign(@F(0), y)) : @Pmk(@F(0), copysign({_INF}, y));
  }}
  if (@Pisnan(y)) return @Pmk(y, y);
  @F ax = fabs(x), ay = fabs(y), scale = @F(1);
  if (ax > @F(@QMAX) || ay > @F(@QMAX)) {{ ax *= @F(0.25); ay *= @F(0.25); scale = @F(2); }}
  else if (ax < @F(@TINY) && ay < @F(@TINY)) {{ ax *= @F(@UP); ay *= @F(@UP); scale = @F(@UPR); }}
  @F t = sqrt((ax + mnp_hypot_@F(ax, ay)) * @F(0.5));
  @F u = ay / (@F(2) * t);
  if (x >= @F(0)) return @Pmk(t * scale, copysign(u * scale, y));
  return @Pmk(u * scale, copysign(t * scale, y));
}}"""),
    "exp": (("mk", "cls"), f"""inline @C @Pexp(@C z) {{
  @F x = z.re, y = z.im;
  if (y == @F(0)) return @Pmk(exp(x), y);
  if (@Pisinf(x) && !@Pisfin(y)) return x > @F(0) ? @Pmk(x, {_NAN}) : @Pmk(@F(0), @Pisinf(y) ? copysign(@F(0), y) : @F(0));
  if (!@Pisfin(y)) return @Pmk({_NAN}, {_NAN});
  @F c = cos(y), s = sin(y);
  if (x > @F(@EOVF)) {{ @F e = exp(x * @F(0.5)); return @Pmk(e * c * e, e * s * e); }}
  @F e = exp(x);
  return @Pmk(e * c, e * s);
}}"""),
    # exp(z) - 1 without cancellation: Re = expm1(x) cos y - 2 sin^2(y / 2).
    "expm1": (("mk", "cls", "exp", "expm1r"), f"""inline @C @Pexpm1(@C z) {{
  @F x = z.re, y = z.im;
  if (y == @F(0)) return @Pmk(x == @F(0) ? @F(0) : mnp_expm1_@F(x), y);  // the standard's 0 + 0j for -0 too
  if (@Pisinf(x) && !@Pisfin(y)) return x > @F(0) ? @Pmk(x, {_NAN}) : @Pmk(@F(-1), @F(0));
  if (!@Pisfin(y)) return @Pmk({_NAN}, {_NAN});
  if (fabs(x) >= @F(1)) {{ @C e = @Pexp(z); return @Pmk(e.re - @F(1), e.im); }}
  @F h = sin(y * @F(0.5));
  return @Pmk(mnp_expm1_@F(x) * cos(y) - @F(2) * h * h, exp(x) * sin(y));
}}"""),
    # log |z| near |z| = 1 through log1p((m - 1)(m + 1) + n^2), else log(hypot).
    "log": (("mk", "cls", "hypot", "log1pr"), f"""inline @C @Plog(@C z) {{
  @F x = z.re, y = z.im, ax = fabs(x), ay = fabs(y), re;
  if (@Pisinf(x) || @Pisinf(y)) re = {_INF};
  else if (@Pisnan(x) || @Pisnan(y)) re = {_NAN};
  else {{
    @F m = ax > ay ? ax : ay, n = ax > ay ? ay : ax;
    if (m >= @F(0.5) && m <= @F(2)) re = @F(0.5) * mnp_log1p_@F((m - @F(1)) * (m + @F(1)) + n * n);
    else re = log(mnp_hypot_@F(ax, ay));
  }}
  return @Pmk(re, atan2(y, x));
}}"""),
    "log1p": (("mk", "cls", "log", "log1pr"), """inline @C @Plog1p(@C z) {
  @F x = z.re, y = z.im;
  if (@Pisfin(x) && @Pisfin(y) && fabs(x) < @F(0.5) && fabs(y) < @F(0.5))
    return @Pmk(@F(0.5) * mnp_log1p_@F(x * (@F(2) + x) + y * y), atan2(y, @F(1) + x));
  return @Plog(@Pmk(@F(1) + x, y));
}"""),
    # NumPy's log2 and log10: log z scaled (both parts)
    "log2": (("log",), "inline @C @Plog2(@C z) { @C w = @Plog(z); @F k = @F(1.44269504088896340736); "
                       "return @Pmk(w.re * k, w.im * k); }"),
    "log10": (("log",), "inline @C @Plog10(@C z) { @C w = @Plog(z); @F k = @F(0.43429448190325182765); "
                        "return @Pmk(w.re * k, w.im * k); }"),
    "sinh": (("mk", "cls"), f"""inline @C @Psinh(@C z) {{
  @F x = z.re, y = z.im;
  if (y == @F(0)) return @Pmk(sinh(x), y);
  if (!@Pisfin(y)) {{
    if (x == @F(0)) return @Pmk(x, {_NAN});
    if (@Pisinf(x)) return @Pmk({_INF}, {_NAN});  // the real part's sign is unspecified: NumPy's +inf
    return @Pmk({_NAN}, {_NAN});
  }}
  return @Pmk(sinh(x) * cos(y), cosh(x) * sin(y));
}}"""),
    "cosh": (("mk", "cls"), f"""inline @C @Pcosh(@C z) {{
  @F x = z.re, y = z.im;
  if (y == @F(0)) return @Pmk(cosh(x), @Pisnan(x) ? y : copysign(@F(0), x) * y);
  if (!@Pisfin(y)) {{
    if (x == @F(0)) return @Pmk({_NAN}, @F(0));
    if (@Pisinf(x)) return @Pmk({_INF}, {_NAN});
    return @Pmk({_NAN}, {_NAN});
  }}
  return @Pmk(cosh(x) * cos(y), sinh(x) * sin(y));
}}"""),
    # Kahan: t = tan y, b = 1 + t^2, s = sinh x, r = sqrt(1 + s^2): (b r s + i t) / (1 + b s^2).
    "tanh": (("mk", "cls"), f"""inline @C @Ptanh(@C z) {{
  @F x = z.re, y = z.im;
  if (@Pisnan(x)) return y == @F(0) ? @Pmk(x, y) : @Pmk({_NAN}, {_NAN});
  // the array API's 1 + 0j (C99 and glibc: 1 + 0 sin(2y) j), conjugate-symmetric
  if (@Pisinf(x)) return @Pmk(copysign(@F(1), x), copysign(@F(0), y));
  if (!@Pisfin(y)) return x == @F(0) ? @Pmk(x, {_NAN}) : @Pmk({_NAN}, {_NAN});
  if (fabs(x) > @F(@TBIG)) {{
    @F e = exp(@F(-2) * fabs(x));
    return @Pmk(copysign(@F(1), x), @F(4) * sin(y) * cos(y) * e);
  }}
  @F t = tan(y), b = @F(1) + t * t, s = sinh(x), r = sqrt(@F(1) + s * s), d = @F(1) + b * s * s;
  return @Pmk(b * r * s / d, t / d);
}}"""),
    # sin z = -i sinh(iz), cos z = cosh(iz), tan z = -i tanh(iz); where the sign of an infinite part is
    # unspecified (NaN + inf j) it is +inf, as NumPy's (glibc's) csin and casin give.
    "sin": (("sinh",), "inline @C @Psin(@C z) { @C w = @Psinh(@Pmk(-z.im, z.re)); @C r = @Pmk(w.im, -w.re); "
                       "if (@Pisnan(r.re) && @Pisinf(r.im)) r.im = @F(INFINITY); return r; }"),
    "cos": (("cosh",), "inline @C @Pcos(@C z) { return @Pcosh(@Pmk(-z.im, z.re)); }"),
    "tan": (("tanh",), "inline @C @Ptan(@C z) { @C w = @Ptanh(@Pmk(-z.im, z.re)); return @Pmk(w.im, -w.re); }"),
    # Kahan's asin for finite z: Re = atan(x / Re(sqrt(1-z) sqrt(1+z))), Im = asinh(Im(conj(sqrt(1-z)) sqrt(1+z))).
    "asin_fin": (("sqrt",), """inline @C @Pasin_fin(@F x, @F y) {
  @C s1 = @Psqrt(@Pmk(@F(1) - x, -y)), s2 = @Psqrt(@Pmk(@F(1) + x, y));
  return @Pmk(atan2(x, s1.re * s2.re - s1.im * s2.im), asinh(s1.re * s2.im - s1.im * s2.re));
}"""),
    # asinh(z) = -i asin(iz); odd and conjugate-symmetric: computed for |x| + i|y|, signs put back.
    "asinh": (("asin_fin",), f"""inline @C @Pasinh(@C z) {{
  @F x = z.re, y = z.im, ax = fabs(x), ay = fabs(y), re, im;
  if (@Pisnan(x)) {{
    if (y == @F(0)) return @Pmk(x, y);
    return @Pisinf(y) ? @Pmk({_INF}, {_NAN}) : @Pmk({_NAN}, {_NAN});
  }}
  if (@Pisnan(y)) return @Pisinf(x) ? @Pmk(x, {_NAN}) : @Pmk({_NAN}, {_NAN});
  if (@Pisinf(ax) || @Pisinf(ay)) {{
    re = {_INF};
    im = @Pisinf(ax) ? (@Pisinf(ay) ? {_PI4} : @F(0)) : {_PI2};
  }} else {{
    @C w = @Pasin_fin(-ay, ax);
    re = w.im; im = -w.re;
  }}
  return @Pmk(copysign(re, x), copysign(im, y));
}}"""),
    "asin": (("asinh",), "inline @C @Pasin(@C z) { if (@Pisnan(z.im) && @Pisinf(z.re)) return @Pmk(@F(NAN), @F(INFINITY)); "
                         "@C w = @Pasinh(@Pmk(-z.im, z.re)); return @Pmk(w.im, -w.re); }"),
    # Kahan's acos: Re = 2 atan(Re sqrt(1-z) / Re sqrt(1+z)), Im = asinh(Im(conj(sqrt(1+z)) sqrt(1-z))),
    # computed for x + i|y| (acos(conj z) = conj(acos z)).
    "acos": (("sqrt",), f"""inline @C @Pacos(@C z) {{
  @F x = z.re, y = z.im, ay = fabs(y);
  @C r;
  if (@Pisnan(x) || @Pisnan(y)) {{
    if (@Pisinf(y)) r = @Pmk({_NAN}, -{_INF});
    else if (@Pisinf(x)) r = @Pmk({_NAN}, -{_INF});
    else if (x == @F(0)) r = @Pmk({_PI2}, {_NAN});
    else r = @Pmk({_NAN}, {_NAN});
  }} else if (@Pisinf(x) || @Pisinf(ay)) {{
    if (@Pisinf(x) && @Pisinf(ay)) r = @Pmk(x > @F(0) ? {_PI4} : @F(3) * {_PI4}, -{_INF});
    else if (@Pisinf(x)) r = @Pmk(x > @F(0) ? @F(0) : {_PI}, -{_INF});
    else r = @Pmk({_PI2}, -{_INF});
  }} else {{
    @C s1 = @Psqrt(@Pmk(@F(1) - x, -ay)), s2 = @Psqrt(@Pmk(@F(1) + x, ay));
    r = @Pmk(@F(2) * atan2(s1.re, s2.re), asinh(s2.re * s1.im - s2.im * s1.re));
  }}
  if (@Pneg(y)) r.im = -r.im;
  return r;
}}"""),
    # acosh z = i acos z for Im z >= 0 (conjugate-symmetric).
    "acosh": (("acos",), """inline @C @Pacosh(@C z) {
  @C w = @Pacos(@Pmk(z.re, fabs(z.im)));
  @C r = @Pmk(-w.im, w.re);
  if (@Pneg(z.im)) r.im = -r.im;
  return r;
}"""),
    # atanh: Re = log1p(4x / ((1-x)^2 + y^2)) / 4, Im = atan2(2y, (1-x)(1+x) - y^2) / 2 for |x| + i|y|;
    # large |z|: Re = x / |z|^2, Im = pi/2.
    "atanh": (("mk", "cls", "hypot", "log1pr"), f"""inline @C @Patanh(@C z) {{
  @F x = z.re, y = z.im, ax = fabs(x), ay = fabs(y), re, im;
  if (@Pisnan(x)) return @Pisinf(y) ? @Pmk(@F(0), copysign({_PI2}, y)) : @Pmk({_NAN}, {_NAN});
  if (@Pisnan(y)) return (x == @F(0) || @Pisinf(x)) ? @Pmk(copysign(@F(0), x), {_NAN}) : @Pmk({_NAN}, {_NAN});
  if (@Pisinf(ax) || @Pisinf(ay)) {{ re = @F(0); im = {_PI2}; }}
  else if (ax == @F(1) && ay == @F(0)) {{ re = {_INF}; im = @F(0); }}
  else if (ax > @F(@HUGE) || ay > @F(@HUGE)) {{
    @F h = mnp_hypot_@F(ax, ay);
    re = (ax / h) / h; im = {_PI2};
  }} else if (fabs(@F(1) - ax) < @F(@SMALL) && ay < @F(@SMALL)) {{  // near 1: d would underflow
    @F u = (@F(1) - ax) * @F(@UP2), v = ay * @F(@UP2);
    re = @F(0.25) * (log(@F(4) * ax) - log(u * u + v * v) + @F(2) * log(@F(@UP2)));
    im = @F(0.5) * atan2(@F(2) * ay, (@F(1) - ax) * (@F(1) + ax) - ay * ay);
  }} else {{
    @F d = (@F(1) - ax) * (@F(1) - ax) + ay * ay;
    re = @F(0.25) * mnp_log1p_@F(@F(4) * ax / d);
    im = @F(0.5) * atan2(@F(2) * ay, (@F(1) - ax) * (@F(1) + ax) - ay * ay);
  }}
  return @Pmk(copysign(re, x), copysign(im, y));
}}"""),
    "atan": (("atanh",), "inline @C @Patan(@C z) { if (@Pisnan(z.im) && @Pisinf(z.re)) "
                         "return @Pmk(copysign(@F(1.57079632679489661923), z.re), @F(0)); "
                         "@C w = @Patanh(@Pmk(-z.im, z.re)); return @Pmk(w.im, -w.re); }"),
    # z / |z|; the standard's zero and NaN cases; an infinite part gives its direction (NumPy's).
    "sign": (("mk", "cls", "hypot"), f"""inline @C @Psign(@C z) {{
  @F x = z.re, y = z.im;
  if (x == @F(0) && y == @F(0)) return @Pmk(@F(0), @F(0));
  if (@Pisnan(x) || @Pisnan(y) || (@Pisinf(x) && @Pisinf(y))) return @Pmk({_NAN}, {_NAN});
  if (@Pisinf(x)) return @Pmk(copysign(@F(1), x), @F(0));
  if (@Pisinf(y)) return @Pmk(@F(0), copysign(@F(1), y));
  if (fabs(x) > @F(@QMAX) || fabs(y) > @F(@QMAX)) {{ x *= @F(0.25); y *= @F(0.25); }}
  @F h = mnp_hypot_@F(x, y);
  return @Pmk(x / h, y / h);
}}"""),
    # NumPy's power: exponent 0 gives 1, base 0 gives 0 (real positive exponent) or NaN, small integer
    # exponents multiply by repeated squaring, the rest is exp(b log a).
    "pow": (("mul", "div", "exp", "log"), f"""inline @C @Ppow(@C a, @C b) {{
  if (b.re == @F(0) && b.im == @F(0)) return @Pmk(@F(1), @F(0));
  if (a.re == @F(0) && a.im == @F(0)) {{
    if (b.re > @F(0) && b.im == @F(0)) return @Pmk(@F(0), @F(0));
    return @Pmk({_NAN}, {_NAN});
  }}
  if (b.im == @F(0) && b.re == floor(b.re) && fabs(b.re) < @F(100)) {{
    int n = int(b.re);
    if (n == 1) return a;
    if (n == 2) return @Pmul(a, a);
    if (n == 3) return @Pmul(@Pmul(a, a), a);
    int m = n < 0 ? -n : n, mask = 1;
    @C r = @Pmk(@F(1), @F(0)), p = a;
    while (true) {{
      if (m & mask) r = @Pmul(r, p);
      mask <<= 1;
      if (m < mask) break;
      p = @Pmul(p, p);
    }}
    return n < 0 ? @Pdiv(@Pmk(@F(1), @F(0)), r) : r;
  }}
  return @Pexp(@Pmul(b, @Plog(a)));
}}"""),
}

# Real helpers of _ops (MSL has no hypot, log1p, expm1) this library calls.
_REAL_HELPERS = {"hypot": "hypot", "log1pr": "log1p", "expm1r": "expm1"}


def _fill(text: str, dt) -> str:
    for k, v in sorted(_TYPES[dt].items(), key=lambda kv: -len(kv[0])):  # @UPR before @UP
        text = text.replace(k, v)
    return text


def _need(g, name: str, dt) -> str:
    """Registers helper `name` for complex dtype dt (after what it calls); returns its MSL name."""
    if name in _REAL_HELPERS:
        w = _TYPES[dt]["@F"]
        real = _REAL_HELPERS[name]
        g.helper(f"mnp_{real}_{w}", _ops._METAL_HELPERS[real].replace("FT", w))
        return f"mnp_{real}_{w}"
    deps, text = _LIB[name]
    for d in deps:
        _need(g, d, dt)
    full = _TYPES[dt]["@P"] + name
    g.helper(full, _fill(text, dt))
    return full


def real_of(dt):
    """The real dtype of a complex dtype's parts."""
    return D.float32 if dt == D.complex64 else D.float64


# Operations defined for complex operands (the array API's list, plus NumPy's reciprocal and the
# logical functions, which test != 0); anything else on complex is refused at the call.
SUPPORTED = {
    "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atanh", "conj", "cos", "cosh", "divide", "equal",
    "exp", "expm1", "imag", "isfinite", "isinf", "isnan", "log", "log1p", "log2", "log10", "multiply",
    "negative", "not_equal", "positive", "pow", "real", "reciprocal", "round", "rint", "sign", "sin", "sinh",
    "sqrt", "square", "subtract", "tan", "tanh", "where", "cast", "logical_and", "logical_or", "logical_xor",
    "logical_not", "complex",
}
_UNARY_LIB = {"acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "exp", "expm1", "log", "log1p",
              "log2", "log10", "sign", "sin", "sinh", "sqrt", "tan", "tanh"}


def cast(g, v: str, frm, to) -> str:
    """MSL converting expression v from dtype frm to dtype to, where either is complex."""
    if frm.kind == "c" and to.kind == "c":
        f = D.msl(real_of(to))
        return f"{_need(g, 'mk', to)}({f}({v}.re), {f}({v}.im))"
    if to.kind == "c":
        f = D.msl(real_of(to))
        return f"{_need(g, 'mk', to)}({f}({v}), {f}(0))"
    if to == D.bool_:
        return f"({v}.re != 0 || {v}.im != 0)"
    return f"{D.msl(to)}({v}.re)"  # NumPy keeps the real part (the standard leaves this unspecified)


def expr(g, op: str, dt, a: list, rdt) -> str:
    """The MSL expression of `op` on complex operands `a` (already of complex dtype dt)."""
    if op == "cast":
        return cast(g, a[0], dt, rdt)
    x = a[0]
    y = a[1] if len(a) > 1 else None
    if op == "complex":  # internal: two real parts (of dtype real_of(rdt)) into one complex
        return f"{_need(g, 'mk', rdt)}({x}, {y})"
    f = D.msl(real_of(dt))
    p = _TYPES[dt]["@P"]
    mk = _need(g, "mk", dt)
    if op in ("positive",):
        return x
    if op == "conj":
        return f"{mk}({x}.re, -{x}.im)"
    if op == "negative":
        return f"{mk}(-{x}.re, -{x}.im)"
    if op == "real":
        return f"{x}.re"
    if op == "imag":
        return f"{x}.im"
    if op == "abs":
        _need(g, "hypot", dt)
        return f"mnp_hypot_{f}({x}.re, {x}.im)"
    if op in _UNARY_LIB:
        return f"{_need(g, op, dt)}({x})"
    if op in ("round", "rint"):
        return f"{mk}(rint({x}.re), rint({x}.im))"
    if op == "square":
        return f"{_need(g, 'mul', dt)}({x}, {x})"
    if op == "reciprocal":
        return f"{_need(g, 'div', dt)}({mk}({f}(1), {f}(0)), {x})"
    if op in ("add", "subtract", "multiply", "divide", "pow"):
        name = {"add": "add", "subtract": "sub", "multiply": "mul", "divide": "div", "pow": "pow"}[op]
        return f"{_need(g, name, dt)}({x}, {y})"
    if op == "isnan":
        return f"({x}.re != {x}.re || {x}.im != {x}.im)"
    if op == "isinf":
        _need(g, "cls", dt)
        return f"({p}isinf({x}.re) || {p}isinf({x}.im))"
    if op == "isfinite":
        _need(g, "cls", dt)
        return f"({p}isfin({x}.re) && {p}isfin({x}.im))"
    if op == "equal":
        return f"({x}.re == {y}.re && {x}.im == {y}.im)"
    if op == "not_equal":
        return f"({x}.re != {y}.re || {x}.im != {y}.im)"
    nz = [f"({v}.re != 0 || {v}.im != 0)" for v in a]
    if op == "logical_not":
        return f"!{nz[0]}"
    if op == "logical_and":
        return f"({nz[0]} && {nz[1]})"
    if op == "logical_or":
        return f"({nz[0]} || {nz[1]})"
    if op == "logical_xor":
        return f"({nz[0]} != {nz[1]})"
    if op == "where":
        return f"({a[0]} ? {a[1]} : {a[2]})"
    D.refuse_complex(op, dt)
    raise NotImplementedError(op)



_ops.COMPLEX["expr"] = expr
