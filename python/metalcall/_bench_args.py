"""Argument specs of `python -m metalcall bench FILE.metal --arg SPEC`: parsing and making the values.

    f32[1e6]:rand   a buffer of 10^6 float32, uniform in [0, 1) (integers: uniform in [0, 100))
    f32[1024]:zeros / :ones / :arange / :randn / :3.5 (every element 3.5)
    out:f32[1e6]    an output buffer (zero-filled), shown after the run
    u32:7, f32:2.5  a scalar of that type
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

TYPES = {
    "f16": np.float16, "f32": np.float32, "f64": np.float64,
    "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
}
INITS = ("rand", "randn", "zeros", "ones", "arange")
USAGE = ("an argument spec is TYPE[N]:INIT (a buffer; INIT one of rand, randn, zeros, ones, arange or a number), "
         "out:TYPE[N] (an output buffer) or TYPE:VALUE (a scalar); TYPE one of " + " ".join(TYPES) +
         "; N an integer like 1024, 1e6 or 2^20, or dimensions like 512x512")

_BUFFER = re.compile(r"^(?P<type>\w+)\[(?P<shape>[^\]]*)\](?::(?P<init>.+))?$")


class SpecError(ValueError):
    """A --arg spec, --grid or size that does not parse; the message says what is expected."""


@dataclass(frozen=True)
class ArgSpec:
    text: str
    dtype: np.dtype
    shape: Optional[tuple[int, ...]]  # None: a scalar
    init: str  # buffer: one of INITS or a number; scalar: the value as written
    output: bool = False

    @property
    def nbytes(self) -> int:
        count = int(np.prod(self.shape)) if self.shape is not None else 1
        return count * self.dtype.itemsize


def parse_count(text: str, what: str = "size") -> int:
    """'1024', '1e6', '2^20' or '2**20' as a positive integer."""
    t = text.strip().replace("_", "")
    try:
        if "^" in t or "**" in t:
            base, exponent = re.split(r"\^|\*\*", t)
            value = int(base) ** int(exponent)
        else:
            number = float(t)
            if not number.is_integer():
                raise SpecError(f"{what} must be a whole number, got {text!r}")
            value = int(number)
    except (ValueError, OverflowError) as e:
        if isinstance(e, SpecError):
            raise
        raise SpecError(f"{what} must be an integer like 1024, 1e6 or 2^20, got {text!r}") from None
    if value < 1:
        raise SpecError(f"{what} must be at least 1, got {text!r}")
    return value


def parse_grid(text: str) -> tuple[int, ...]:
    """'N', 'N,M' or 'N,M,K'."""
    parts = text.split(",")
    if not 1 <= len(parts) <= 3:
        raise SpecError(f"--grid takes 1 to 3 sizes separated by commas (N[,M[,K]]), got {text!r}")
    return tuple(parse_count(p, "a grid size") for p in parts)


def _dtype(name: str, spec: str) -> np.dtype:
    if name not in TYPES:
        raise SpecError(f"unknown type {name!r} in --arg {spec!r}; the types are " + " ".join(TYPES))
    return np.dtype(TYPES[name])


def parse_spec(spec: str) -> ArgSpec:
    text = spec.strip()
    output = text.startswith("out:")
    body = text[4:] if output else text
    m = _BUFFER.match(body)
    if m:
        dtype = _dtype(m["type"], spec)
        shape = tuple(parse_count(d, f"a size in --arg {spec!r}") for d in re.split(r"[x,]", m["shape"]))
        init = m["init"] if m["init"] is not None else "zeros"
        if output and m["init"] is not None:
            raise SpecError(f"--arg {spec!r}: an out: buffer is zero-filled, write out:TYPE[N] without :INIT")
        if init not in INITS:
            try:
                float(init)
            except ValueError:
                raise SpecError(f"--arg {spec!r}: unknown initial value {init!r}; use one of "
                                f"{', '.join(INITS)} or a number") from None
        return ArgSpec(spec, dtype, shape, init, output)
    if output:
        raise SpecError(f"--arg {spec!r}: out: needs a buffer, like out:f32[1e6]")
    if ":" not in body:
        raise SpecError(f"--arg {spec!r} does not parse: {USAGE}")
    name, value = body.split(":", 1)
    dtype = _dtype(name, spec)
    scalar_value(dtype, value, spec)  # fails early on a bad or out-of-range value
    return ArgSpec(spec, dtype, None, value)


def scalar_value(dtype: np.dtype, text: str, spec: str) -> Any:
    try:
        if dtype.kind == "f":
            return dtype.type(float(text))
        number = int(text, 0)
    except ValueError:
        raise SpecError(f"--arg {spec!r}: {text!r} is not a {dtype.name} value") from None
    info = np.iinfo(dtype)
    if not info.min <= number <= info.max:
        raise SpecError(f"--arg {spec!r}: {number} is out of range for {dtype.name} [{info.min}, {info.max}]")
    return dtype.type(number)


def make_host_value(spec: ArgSpec, rng: np.random.Generator) -> Any:
    """The NumPy array (buffers) or NumPy scalar the spec describes."""
    if spec.shape is None:
        return scalar_value(spec.dtype, spec.init, spec.text)
    shape, dtype = spec.shape, spec.dtype
    if spec.init == "zeros":
        return np.zeros(shape, dtype)
    if spec.init == "ones":
        return np.ones(shape, dtype)
    if spec.init == "arange":
        return np.arange(int(np.prod(shape))).astype(dtype).reshape(shape)
    if spec.init in ("rand", "randn"):
        if dtype.kind == "f":
            values = rng.random(shape) if spec.init == "rand" else rng.standard_normal(shape)
            return values.astype(dtype)
        return rng.integers(0, 100, shape).astype(dtype)
    return np.full(shape, float(spec.init)).astype(dtype)
