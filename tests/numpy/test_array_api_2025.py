"""The array API 2025.12's additions and changes (docs/numpy.md), each against NumPy or values derived
by hand from the standard: broadcast_shapes, isin, expand_dims with a tuple of axes, permute_dims
with negative axes, searchsorted with a scalar, tuples from broadcast_arrays / meshgrid /
__array_namespace_info__().devices(), linalg.eig and linalg.eigvals."""

import itertools

import numpy as np
import pytest

import metalcall.numpy as mnp
from mnp_check import INTS, check, supported


def test_version_and_namespace(device):
    assert mnp.__array_api_version__ == "2025.12"
    x = mnp.asarray([1], device=device)
    for v in (None, "2023.12", "2024.12", "2025.12"):
        assert x.__array_namespace__(api_version=v) is mnp
    with pytest.raises(ValueError):
        x.__array_namespace__(api_version="2026.12")
    for name in ("broadcast_shapes", "isin"):
        assert callable(getattr(mnp, name)) and name in mnp.__all__
    for name in ("eig", "eigvals"):
        assert callable(getattr(mnp.linalg, name)) and name in mnp.linalg.__all__


def test_tuples_not_lists(device):
    info = mnp.__array_namespace_info__()
    devs = info.devices()
    assert type(devs) is tuple and info.default_device() in devs
    a, b = np.arange(3, dtype=np.int32), np.arange(4, dtype=np.float32).reshape(4, 1)
    out = mnp.broadcast_arrays(mnp.asarray(a, device=device), mnp.asarray(b, device=device))
    assert type(out) is tuple and len(out) == 2
    for g, e in zip(out, np.broadcast_arrays(a, b)):
        check(g, e)
    assert mnp.meshgrid() == () and type(mnp.meshgrid()) is tuple
    for indexing in ("xy", "ij"):
        for arrays in ([a], [a, np.arange(5, dtype=np.int32)], [a, b.ravel(), np.arange(2, dtype=np.int32)]):
            out = mnp.meshgrid(*(mnp.asarray(x, device=device) for x in arrays), indexing=indexing)
            assert type(out) is tuple
            exp = np.meshgrid(*arrays, indexing=indexing)
            assert len(out) == len(exp)
            for g, e in zip(out, exp):
                check(g, e)


@pytest.mark.parametrize("shapes", [
    (), ((),), ((3,),), ((2, 3), (3,)), ((2, 1), (1, 3)), ((0,), (1,)), ((4, 0, 2), (1, 2)), ((5, 1, 3), (4, 1), ()),
    ((1,), (1, 1), (1, 1, 1)), ((7, 1, 1, 2), (6, 1, 2), (1, 1), (2,)), ((0, 1), (1, 0)),
])
def test_broadcast_shapes(shapes):
    got = mnp.broadcast_shapes(*shapes)
    assert type(got) is tuple and all(type(d) is int for d in got)
    assert got == np.broadcast_shapes(*shapes)


@pytest.mark.parametrize("shapes", [((2,), (3,)), ((2, 3), (3, 2)), ((0,), (2,)), ((1, 2), (4, 3), (1,))])
def test_broadcast_shapes_incompatible(shapes):
    with pytest.raises(ValueError):
        mnp.broadcast_shapes(*shapes)


def test_expand_dims_tuples_against_numpy(device):
    for ndim in range(4):
        a = np.arange(int(np.prod(range(2, 2 + ndim))), dtype=np.int16).reshape(tuple(range(2, 2 + ndim)))
        x = mnp.asarray(a, device=device)
        for k in range(1, 4):
            m = ndim + k
            for axes in itertools.permutations(range(-m - 1, m + 1), k):
                norm = [ax + m if ax < 0 else ax for ax in axes]
                if any(not 0 <= ax < m for ax in norm) or len(set(norm)) != k:
                    with pytest.raises((IndexError, ValueError)):
                        mnp.expand_dims(x, axis=axes)
                    continue
                check(mnp.expand_dims(x, axis=axes), np.expand_dims(a, axes))
                check(mnp.expand_dims(x, axes), np.expand_dims(a, axes))  # positional too
    x = mnp.asarray([1.0, 2.0], device=device)  # 1-D: a tuple of k positions in a result of 1 + k axes
    for bad in ((0, 0), (1, -2), (0, 3), (-4, 0), (2, 2, 0)):  # (1, -2): both are position 1 of 3
        with pytest.raises((IndexError, ValueError)):
            mnp.expand_dims(x, axis=bad)
    assert mnp.expand_dims(x, axis=(0, -1)).shape == (1, 2, 1)
    assert mnp.expand_dims(x, axis=(-1, 0)).shape == (1, 2, 1)
    assert mnp.expand_dims(x, axis=()).shape == (2,)


def test_permute_dims_negative_axes(device):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = mnp.asarray(a, device=device)
    for perm in itertools.permutations(range(3)):
        for signs in itertools.product((0, 1), repeat=3):
            axes = tuple(p - 3 if s else p for p, s in zip(perm, signs))
            check(mnp.permute_dims(x, axes), np.transpose(a, axes))
    for bad in ((0, -3, 1), (0, 1), (0, 1, 3), (-4, 0, 1)):
        with pytest.raises((IndexError, ValueError)):
            mnp.permute_dims(x, bad)


def _search_expected(h, v, side, dt):
    """The standard's answer: v as a 0-d array of x1's dtype (floats) or past every element (integers
    outside the dtype's range)."""
    if dt.kind in "iu" and isinstance(v, int) and not isinstance(v, bool):
        info = np.iinfo(dt)
        if v < info.min:
            return 0
        if v > info.max:
            return h.size
    if dt.kind in "iu" and isinstance(v, float):
        return int(np.searchsorted(h.astype(np.float64), v, side=side))
    return int(np.searchsorted(h, np.asarray(v, dtype=dt), side=side))


@pytest.mark.parametrize("name", INTS + ("float32", "float64"))
def test_searchsorted_scalar(device, name):
    if name not in supported(device, (name,)):
        pytest.skip("no float64 here")
    dt = np.dtype(name)
    if dt.kind == "f":
        h = np.array([-np.inf, -2.5, -0.0, 0.1, 0.1, 1.0, 3.0, np.inf, np.nan], dtype=dt)
        values = [-3, 0, 1, 2, 0.1, -0.0, 0.0, 1.0, 2.9999, 1e30, -1e30, float("inf"), float("-inf"), float("nan"),
                  True, False]
    else:
        info = np.iinfo(dt)
        h = np.array(sorted({info.min, info.min + 1, 0, 1, 1, 5, info.max - 1, info.max}), dtype=dt)
        h = np.sort(np.concatenate([h, np.array([1], dtype=dt)]))
        values = [info.min, info.min - 1, info.max, info.max + 1, 0, 1, 2, 5, 6, -1, 2**70, -2**70, True, 1.5]
    x1 = mnp.asarray(h, device=device)
    for v in values:
        for side in ("left", "right"):
            got = mnp.searchsorted(x1, v, side=side)
            assert got.shape == () and got.dtype == np.int64, (v, side)
            assert int(got) == _search_expected(h, v, side, dt), (name, v, side)
    # with a sorter: the same answers as searching the sorted array
    perm = np.random.default_rng(1).permutation(h.size)
    shuffled = mnp.asarray(h[perm], device=device)
    sorter = mnp.asarray(np.argsort(h[perm], kind="stable"), device=device)
    for v in values[:6]:
        got = mnp.searchsorted(shuffled, v, side="right", sorter=sorter)
        assert int(got) == _search_expected(h, v, "right", dt), (name, v)


def test_searchsorted_scalar_float32_is_searched_as_float32(device):
    # 0.1 as float32 equals the element float32(0.1); NumPy compares float64(0.1), below it
    x1 = mnp.asarray(np.array([0.1, 0.5], dtype=np.float32), device=device)
    assert int(mnp.searchsorted(x1, 0.1, side="left")) == 0
    assert int(mnp.searchsorted(x1, 0.1, side="right")) == 1


def _isin_expected(a, b, invert):
    """By Python values (exact for int64 against uint64, which NumPy compares in float64)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "iub" and b.dtype.kind in "iub":
        pool = {int(v) for v in b.ravel()}
        out = np.array([int(v) in pool for v in a.ravel()], dtype=bool).reshape(a.shape)
    else:
        out = np.isin(a, b)
    return ~out if invert else out


@pytest.mark.parametrize("n1,n2", list(itertools.product(INTS, repeat=2)))
def test_isin_integer_dtypes(device, n1, n2):
    rng = np.random.default_rng(hash((n1, n2)) % 2**32)
    i1, i2 = np.iinfo(n1), np.iinfo(n2)
    edges = [i1.min, i1.max, i2.min, i2.max, 0, 1, -1, 127, 128, 255, 256, 2**31, 2**32, 2**63 - 1]
    def draw(info, dt, shape):
        pool = np.array([e for e in edges if info.min <= e <= info.max], dtype=object)
        v = rng.integers(max(info.min, -300), min(info.max, 300) + 1, size=shape, dtype=np.int64).astype(dt)
        flat = v.reshape(-1)
        picks = rng.integers(0, 3, size=flat.size) == 0
        flat[picks] = pool[rng.integers(0, pool.size, size=int(picks.sum()))].astype(dt)
        return v
    a, b = draw(i1, np.dtype(n1), (5, 7)), draw(i2, np.dtype(n2), (3, 11))
    for invert in (False, True):
        got = mnp.isin(mnp.asarray(a, device=device), mnp.asarray(b, device=device), invert=invert)
        assert got.dtype == mnp.bool and got.shape == a.shape
        check(got, _isin_expected(a, b, invert))


def test_isin_int64_uint64_exact(device):
    a = np.array([2**63 - 1, -1, 0, 5, -2**63], dtype=np.int64)
    b = np.array([2**64 - 1, 2**63, 2**63 - 1, 5, 2**64 - 5], dtype=np.uint64)
    ma, mb = mnp.asarray(a, device=device), mnp.asarray(b, device=device)
    check(mnp.isin(ma, mb), np.array([True, False, False, True, False]))
    check(mnp.isin(mb, ma), np.array([False, False, True, True, False]))
    check(mnp.isin(mb, ma, invert=True), np.array([True, True, False, False, True]))


@pytest.mark.parametrize("name", ["float32", "float64", "complex64", "complex128"])
def test_isin_floats(device, name):
    if name.replace("complex128", "float64") not in supported(device, (name.replace("complex128", "float64"),)):
        pytest.skip("no float64 here")
    nan, inf = np.nan, np.inf
    a = np.array([0.0, -0.0, nan, inf, -inf, 1.5, 2.0, 1e-30, 3.0], dtype=name)
    b = np.array([[nan, -0.0, inf], [2.0, 7.0, 1e-30]], dtype=name)
    if name.startswith("complex"):
        a = a + np.array([0, 0, 0, 0, 0, 1j, 0, 0, -1j], dtype=name)
        b = b + np.array([[0, 0, 0], [0, 0, 0]], dtype=name)
        b[1, 1] = 3.0 - 1j
    for invert in (False, True):
        got = mnp.isin(mnp.asarray(a, device=device), mnp.asarray(b, device=device), invert=invert)
        check(got, np.isin(a, b, invert=invert))
    # NaN is in nothing (equality); -0 is +0
    got = np.asarray(mnp.isin(mnp.asarray(a, device=device), mnp.asarray(b, device=device)))
    assert not got[2] and got[0] and got[1]


def test_isin_shapes_scalars_and_mixed_kinds(device):
    a = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int32)
    x = mnp.asarray(a, device=device)
    for b in (np.array([], dtype=np.int32), np.array(3, dtype=np.int32), np.zeros((0, 4), dtype=np.int8),
              np.array([[6], [1]], dtype=np.uint8), np.array([True]), np.array([2.0, 5.5], dtype=np.float32)):
        for invert in (False, True):
            check(mnp.isin(x, mnp.asarray(b, device=device), invert=invert), np.isin(a, b, invert=invert))
    empty = mnp.asarray(np.zeros((0, 3), dtype=np.int16), device=device)
    check(mnp.isin(empty, x), np.zeros((0, 3), dtype=bool))
    zero_d = mnp.asarray(np.int64(4), device=device)
    check(mnp.isin(zero_d, x), np.array(True))
    # Python scalars on either side; out of the array's range: in nothing
    for v in (3, 7, -1, 2**40, -2**40):
        for invert in (False, True):
            check(mnp.isin(x, v, invert=invert), np.isin(a, v, invert=invert) if abs(v) < 2**31 else
                  np.full(a.shape, invert))
            got = mnp.isin(v, x, invert=invert)
            assert got.shape == () and got.dtype == mnp.bool
            assert bool(got) == ((v in a.ravel().tolist()) != invert)
    bools = np.array([[True, False], [False, False]])
    for b in (np.array([True]), np.array([False, False]), np.array([], dtype=bool)):
        check(mnp.isin(mnp.asarray(bools, device=device), mnp.asarray(b, device=device)), np.isin(bools, b))
    f16 = np.array([0.5, -0.0, np.inf, 65504], dtype=np.float16)
    check(mnp.isin(mnp.asarray(f16, device=device), mnp.asarray(np.array([0.0, 65504], np.float16), device=device)),
          np.array([False, True, False, True]))
    u8 = mnp.asarray(np.array([0, 44, 255], dtype=np.uint8), device=device)
    check(mnp.isin(u8, 300), np.array([False, False, False]))  # 300 is not 44 (300 mod 256)
    with pytest.raises(TypeError):
        mnp.isin(1, 2)


# -- linalg.eig / eigvals --------------------------------------------------------------------------

_EPS = {np.complex64: np.finfo(np.float32).eps, np.complex128: np.finfo(np.float64).eps}


def _complex_of(name):
    return np.complex64 if name in ("float32", "complex64") else np.complex128


def _check_eig(a, w, v, cond_scale=1.0, slack=None):
    """w, v (NumPy arrays) against the matrix a: dtype, unit columns, residual |A v - w v| of order
    eps ||A|| (backward stability), and each of NumPy's eigenvalues matched by one of w within
    eps ||A|| times its condition number (1 / |y^H x|: the norm of row i of X^-1, X NumPy's unit
    eigenvectors) or `slack` (defective matrices, where that number is infinite)."""
    n = a.shape[-1]
    cdt = _complex_of(a.dtype.name)
    assert w.dtype == cdt and w.shape == a.shape[:-1]
    if v is not None:
        assert v.dtype == cdt and v.shape == a.shape
    eps = _EPS[cdt]
    for idx in np.ndindex(a.shape[:-2]):
        m = a[idx].astype(np.complex128)
        big = np.abs(m).max()
        big = big if big > 0 else 1.0
        m = m / big  # (the checks are homogeneous: computed on a / big, free of overflow)
        wi = w[idx].astype(np.complex128) / big
        norm = max(np.linalg.norm(m, 2), np.finfo(np.float64).tiny)
        ew, ev = np.linalg.eig(m)
        if v is not None:
            vv = v[idx].astype(np.complex128)
            np.testing.assert_allclose(np.linalg.norm(vv, axis=0), 1.0, rtol=50 * eps)
            resid = np.linalg.norm(m @ vv - vv * wi, axis=0)
            assert resid.max() <= 40 * n * eps * norm, (resid.max(), norm)
        try:
            kappa = np.linalg.norm(np.linalg.inv(ev), axis=1)
        except np.linalg.LinAlgError:
            kappa = np.full(n, np.inf)
        got = list(wi)
        for lam, k in sorted(zip(ew, kappa), key=lambda t: t[1]):  # best-conditioned first
            j = int(np.argmin([abs(lam - g) for g in got]))
            tol = 40 * n * eps * norm * cond_scale * min(k, 1e12)
            if slack is not None:
                tol = max(tol, slack / big)
            assert abs(lam - got[j]) <= tol, (lam, got[j], tol, k)
            got.pop(j)


@pytest.mark.parametrize("name", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 17])
def test_eig_random(device, name, n):
    if name.replace("complex128", "float64") not in supported(device, (name.replace("complex128", "float64"),)):
        pytest.skip("no float64 here")
    rng = np.random.default_rng(n * 7 + len(name))
    a = rng.standard_normal((3, n, n))
    if name.startswith("complex"):
        a = a + 1j * rng.standard_normal((3, n, n))
    a = a.astype(name)
    x = mnp.asarray(a, device=device)
    w, v = mnp.linalg.eig(x)
    res = mnp.linalg.eig(x)
    assert res._fields == ("eigenvalues", "eigenvectors")
    _check_eig(a, np.asarray(w), np.asarray(v))
    wv = np.asarray(mnp.linalg.eigvals(x))
    _check_eig(a, wv, None)


def test_eig_stacks_and_empty(device):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 3, 4, 4))
    x = mnp.asarray(a, device=device)
    w, v = mnp.linalg.eig(x)
    _check_eig(a, np.asarray(w), np.asarray(v))
    for shape in ((0, 0), (3, 0, 0), (0, 2, 2)):
        w, v = mnp.linalg.eig(mnp.asarray(np.zeros(shape), device=device))
        assert w.shape == shape[:-1] and v.shape == shape and w.dtype == np.complex128 == v.dtype
        assert mnp.linalg.eigvals(mnp.asarray(np.zeros(shape, dtype=np.float32), device=device)).dtype == np.complex64
    # integers compute in the default float
    w = np.asarray(mnp.linalg.eigvals(mnp.asarray(np.array([[2, 1], [1, 2]]), device=device)))
    assert w.dtype == np.complex128
    np.testing.assert_allclose(np.sort(w.real), [1, 3], atol=1e-14)
    np.testing.assert_allclose(w.imag, 0, atol=1e-14)
    with pytest.raises(Exception):
        mnp.linalg.eig(mnp.asarray(np.zeros((2, 3)), device=device))
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError):  # LinAlgError, as NumPy's
            mnp.linalg.eig(mnp.asarray(np.array([[1.0, bad], [0.0, 1.0]]), device=device))


def test_eig_special_matrices(device):
    cases = [
        np.array([[0.0, -1.0], [1.0, 0.0]]),                       # +-i
        np.zeros((4, 4)),                                            # all zero
        np.eye(5),                                                   # one repeated eigenvalue, 5 vectors
        np.diag([3.0, -1.0, 2.0, 0.0, 1e-300]),                     # diagonal
        np.triu(np.arange(1.0, 26.0).reshape(5, 5)),                # triangular
        np.array([[1.0, 1e6], [1e-6, 1.0]]),                         # badly scaled (balancing)
        np.array([[1e-200, 2e-200], [3e-200, 4e-200]]),              # tiny entries (scaling)
        np.array([[1e200, 2e200], [-3e200, 4e200]]),                 # huge entries (scaling)
        np.roll(np.eye(6), 1, axis=0),                               # cyclic permutation: the 6th roots of 1
    ]
    # the companion matrix of (x - 1)(x - 2)...(x - 6): eigenvalues 1..6
    coeffs = np.poly(np.arange(1.0, 7.0))
    comp = np.zeros((6, 6))
    comp[0, :] = -coeffs[1:]
    comp[1:, :-1] = np.eye(5)
    cases.append(comp)
    for a in cases:
        x = mnp.asarray(a, device=device)
        w, v = (np.asarray(t) for t in mnp.linalg.eig(x))
        _check_eig(a, w, v)
    w = np.asarray(mnp.linalg.eigvals(mnp.asarray(comp, device=device)))
    np.testing.assert_allclose(np.sort(w.real), np.arange(1.0, 7.0), rtol=1e-8)
    w = np.asarray(mnp.linalg.eigvals(mnp.asarray(np.roll(np.eye(6), 1, axis=0), device=device)))
    roots = np.exp(2j * np.pi * np.arange(6) / 6)
    assert max(min(abs(r - w)) for r in roots) < 1e-13
    # the identity's eigenvectors span the space (not one repeated vector)
    _, v = mnp.linalg.eig(mnp.asarray(np.eye(5), device=device))
    assert np.linalg.matrix_rank(np.asarray(v)) == 5


def test_eig_defective_and_ill_conditioned(device):
    rng = np.random.default_rng(11)
    for name, eps in (("float64", 2.2e-16), ("float32", 1.2e-7)):
        # a Jordan block of 2 (size 4) seen through a random similarity: eigenvalues 2 + O(eps^(1/4))
        j = 2 * np.eye(4) + np.diag(np.ones(3), 1)
        s = rng.standard_normal((4, 4)) + 4 * np.eye(4)
        a = (s @ j @ np.linalg.inv(s)).astype(name)
        norm = np.linalg.norm(a.astype(np.float64), 2)
        w, v = (np.asarray(t) for t in mnp.linalg.eig(mnp.asarray(a, device=device)))
        _check_eig(a, w, v, slack=20 * (eps * norm) ** 0.25 * norm ** 0.75)
        assert np.abs(w - 2).max() < 20 * (eps * norm) ** 0.25 * norm ** 0.75
        # eigenvalues 1..6 through an eigenvector basis of condition ~1e5 (float64) / ~1e2 (float32)
        q1, _ = np.linalg.qr(rng.standard_normal((6, 6)))
        q2, _ = np.linalg.qr(rng.standard_normal((6, 6)))
        x = q1 @ np.diag(np.logspace(0, -5 if name == "float64" else -2, 6)) @ q2
        a = (x @ np.diag(np.arange(1.0, 7.0)) @ np.linalg.inv(x)).astype(name)
        w, v = (np.asarray(t) for t in mnp.linalg.eig(mnp.asarray(a, device=device)))
        _check_eig(a, w, v)
        # a non-normal matrix (Grcar): eigenvalues sensitive, residual still small
        n = 12
        g = (np.diag(-np.ones(n - 1), -1) + sum(np.diag(np.ones(n - k), k) for k in range(4))).astype(name)
        w, v = (np.asarray(t) for t in mnp.linalg.eig(mnp.asarray(g, device=device)))
        _check_eig(g, w, v)


def test_invalid_axis_raises(device):
    """2025.12: 'If provided an invalid axis, the function must raise an exception' (sort, argsort,
    repeat, diff, take, ... had wrapped it modulo ndim: sort(x, axis=2) of a 2-D x sorted axis 0);
    valid negative axes still agree with NumPy."""
    a = np.array([[3.0, 1.0, 2.0], [0.5, 9.0, -1.0]], dtype=np.float32)
    x = mnp.asarray(a, device=device)
    idx = mnp.asarray(np.array([0, 2]), device=device)
    calls = {
        "sort": (lambda ax: mnp.sort(x, axis=ax), lambda ax: np.sort(a, axis=ax)),
        "argsort": (lambda ax: mnp.argsort(x, axis=ax), lambda ax: np.argsort(a, axis=ax, kind="stable")),
        "repeat": (lambda ax: mnp.repeat(x, 2, axis=ax), lambda ax: np.repeat(a, 2, axis=ax)),
        "diff": (lambda ax: mnp.diff(x, axis=ax), lambda ax: np.diff(a, axis=ax)),
        "take": (lambda ax: mnp.take(x, idx, axis=ax), lambda ax: np.take(a, [0, 2], axis=ax) if ax in (1, -1)
                 else np.take(a, [0, 1], axis=ax)),
        "tensordot": (lambda ax: mnp.tensordot(x, x, axes=((ax,), (ax,))),
                      lambda ax: np.tensordot(a, a, axes=((ax,), (ax,)))),
    }
    for name, (got, exp) in calls.items():
        for ax in (2, -3, 5):
            with pytest.raises((IndexError, ValueError)):
                r = got(ax)
                np.asarray(r)
        for ax in (-1, -2, 0, 1):
            if name == "take" and ax in (0, -2):
                r = mnp.take(x, mnp.asarray(np.array([0, 1]), device=device), axis=ax)
            else:
                r = got(ax)
            check(r, exp(ax), dtype=name not in ("argsort",))


def test_boolean_mask_alone_in_a_tuple(device):
    """x[(mask,)] is x[mask] (the mask is still the sole index), for reading and writing; it raised
    IndexError. Masks of 1 and 2 dimensions, a 0-d mask, and an all-False one."""
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    for m in (np.array([True, False, True]), a > 4.5, np.array(True), np.zeros(3, dtype=bool)):
        x = mnp.asarray(a, device=device)
        check(x[(mnp.asarray(m, device=device),)], a[(m,)])
        b = a.copy()
        b[(m,)] = -1.0
        x[(mnp.asarray(m, device=device),)] = -1.0
        check(x, b)
