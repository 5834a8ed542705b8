"""metalcall.numpy's everyday operations against NumPy, side by side in one process: the shapes
where the CPU backend was slowest (vector products, reductions over an inner axis, broadcasting,
integer division, gathers, arg reductions, views with dimensions of one element, small reductions,
reductions of 8-, 16- and 64-bit elements) and a few ordinary ones for scale.

    python benchmarks/bench_mnp_ops_cpu.py [--device cpu] [--rounds 9] [--n 1000000]

Every result is checked against NumPy before it is timed; the rounds take turns between
metalcall.numpy and NumPy (peers_common.measure). Each metalcall.numpy operation reads its
result back to the host (np.asarray or float()), as a user's code would before using it; NumPy's
one-thread BLAS is asked for with OPENBLAS_NUM_THREADS=1 by the caller where wanted.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np

import metalcall as mc
import metalcall.numpy as mnp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers_common import Row, check, machine, measure, render, repeat  # noqa: E402


def _close(got, want, rtol=1e-4, atol=1e-4) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    return got.shape == want.shape and bool(np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol,
                                                         atol=atol))


def rows_for(dev: mc.Device, n: int) -> list[Row]:
    rng = np.random.default_rng(0)
    side = int(round(n ** 0.5))
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    m2 = rng.standard_normal((side, side)).astype(np.float32)
    v = rng.standard_normal(side).astype(np.float32)
    xi = rng.integers(-10**6, 10**6, n).astype(np.int32)
    idx = rng.integers(-n, n, n // 10)
    small = x[: n // 32].copy()
    c_order = np.empty((side, side), np.float32)
    X, Y, M2, V, XI, IDX, SMALL = (mnp.asarray(a, device=dev) for a in (x, y, m2, v, xi, idx, small))
    xcol, yrow = x[:side, None], y[None, :side]
    COL, ROW = X[:side, None], Y[None, :side]
    cases = [
        (f"dot of two {n:.0e} float32 vectors", lambda: float(mnp.matmul(X, Y)), lambda: float(x @ y), 2e-3),
        (f"{side}² float32 matrix @ vector", lambda: np.asarray(M2 @ V), lambda: m2 @ v, 1e-3),
        (f"vector @ {side}² float32 matrix", lambda: np.asarray(V @ M2), lambda: v @ m2, 1e-3),
        (f"sum over axis 0 of {side}² float32", lambda: np.asarray(mnp.sum(M2, axis=0)), lambda: m2.sum(axis=0), 1e-4),
        (f"max over axis 0 of {side}²", lambda: np.asarray(mnp.max(M2, axis=0)), lambda: m2.max(axis=0), 0),
        (f"argmax over axis 0 of {side}²", lambda: np.asarray(mnp.argmax(M2, axis=0)), lambda: m2.argmax(axis=0), 0),
        (f"std over axis 0 of {side}²", lambda: np.asarray(mnp.std(M2, axis=0)), lambda: m2.std(axis=0), 1e-4),
        (f"max of {n:.0e} float32", lambda: float(mnp.max(X)), lambda: float(x.max()), 0),
        (f"argmax of {n:.0e} float32", lambda: int(mnp.argmax(X)), lambda: int(x.argmax()), 0),
        (f"sum of {n:.0e} float32", lambda: float(mnp.sum(X)), lambda: float(x.sum()), 1e-4),
        (f"x[:, None] * y[None, :] + 1, {side} each", lambda: np.asarray(COL * ROW + 1), lambda: xcol * yrow + 1, 1e-6),
        (f"({side}², ) * ({side}, 1) + 1", lambda: np.asarray(M2 * COL + 1), lambda: m2 * xcol + 1, 1e-6),
        (f"x.T + 0 of {side}²", lambda: np.asarray(M2.T + 0), lambda: m2.T + 0, 0),
        # NumPy's x.T + 0 keeps the operand's layout (a contiguous pass, an F-ordered result);
        # metalcall.numpy writes C order, a transposition: the same work in NumPy is this.
        (f"x.T + 0 of {side}² into C order", lambda: np.asarray(M2.T + 0), lambda: np.add(m2.T, 0, out=c_order), 0),
        (f"x // 7, {n:.0e} int32", lambda: np.asarray(XI // 7), lambda: xi // 7, 0),
        (f"x % y, {n:.0e} int32", lambda: np.asarray(XI % (XI // 1000 + 1)), lambda: xi % (xi // 1000 + 1), 0),
        (f"x[idx], {n // 10:.0e} indices into {n:.0e} float32", lambda: np.asarray(X[IDX]), lambda: x[idx], 0),
        (f"sin(x), {n:.0e} float32", lambda: np.asarray(mnp.sin(X)), lambda: np.sin(x), 1e-5),
        (f"exp(x) * y + 2, {n:.0e} float32", lambda: np.asarray(mnp.exp(X) * Y + 2), lambda: np.exp(x) * y + 2, 1e-5),
        (f"x[::2, None] + 1 (a column of {n // 2:.0e})", lambda: np.asarray(X[::2, None] + 1), lambda: x[::2, None] + 1,
         1e-6),
        (f"sum of {n // 32:.0e} float32", lambda: float(mnp.sum(SMALL)), lambda: float(small.sum()), 1e-4),
    ]
    for dt in (np.uint8, np.int16, np.float16, np.float64):  # reductions of other element types
        a = (rng.random(n) * 100).astype(dt)
        A = mnp.asarray(a, device=dev)
        name = np.dtype(dt).name
        cases.append((f"max of {n:.0e} {name}", lambda A=A: float(mnp.max(A)), lambda a=a: float(a.max()), 0))
        cases.append((f"argmax of {n:.0e} {name}", lambda A=A: int(mnp.argmax(A)), lambda a=a: int(a.argmax()), 0))
    rows = []
    for what, ours, theirs, tol in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check(_close(ours(), theirs(), rtol=tol, atol=tol) if tol else np.array_equal(np.asarray(ours()),
                                                                                          np.asarray(theirs())), what)
        row = Row(what)
        row.candidates = [("metalcall.numpy", repeat(ours)), ("NumPy", repeat(theirs))]
        rows.append(row)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--n", type=float, default=1e6, help="elements of the 1-D operands (a square of about as many)")
    args = parser.parse_args()
    dev = mc.Device(args.device)
    mnp.set_default_device(dev)
    print(f"# metalcall.numpy against NumPy on {dev.name}\n\n{machine()}; NumPy {np.__version__}; "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}; {args.rounds} rounds\n", flush=True)
    rows = rows_for(dev, int(args.n))
    for row in rows:
        measure(row, args.rounds, 0.03)
        print(render([row]).splitlines()[-1], flush=True)
    print("\n" + render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
