"""metalcall.numpy.fft against numpy.fft on every device: every function, every norm, lengths that
take each path (powers of two in radix-8/4/2 passes, mixed radices 3..13, primes and other lengths
by Bluestein), cropping and zero-padding (n=, s=), any axis, batches, dtypes and the errors."""

import numpy as np
import pytest

import metalcall as mc
import metalcall.numpy as mnp
from mnp_check import check

NORMS = ("backward", "ortho", "forward")
TOL = {"complex64": 2e-5, "complex128": 1e-11, "float32": 2e-5, "float64": 1e-11}


def _dtypes(device):
    return ["complex64"] if device.backend == "metal" else ["complex64", "complex128"]


def _real(dt):
    return {"complex64": "float32", "complex128": "float64"}[dt]


def _close(got, want, dt):
    g, w = np.asarray(got), np.asarray(want)
    assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
    scale = max(np.abs(w).max(), 1e-30) if w.size else 1
    assert np.abs(g - w).max(initial=0) <= TOL[dt] * scale, np.abs(g - w).max() / scale


def _data(shape, dt, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)


# 1, powers of two (radix 8, 4, 2), mixed radices up to 13, primes over 13 and their products (Bluestein)
LENGTHS = [1, 2, 8, 16, 32, 6, 30, 49, 143, 17, 97, 34, 1000, 4096, 2 * 3 * 5 * 7 * 11 * 13, 1021]


@pytest.mark.parametrize("n", LENGTHS)
def test_fft_ifft_lengths(device, n):
    for dt in _dtypes(device):
        a = _data((3, n), dt, n)
        x = mnp.asarray(a, device=device)
        _close(mnp.fft.fft(x), np.fft.fft(a), dt)
        _close(mnp.fft.ifft(x), np.fft.ifft(a), dt)
        _close(mnp.fft.ifft(mnp.fft.fft(x)), a, dt)  # round trip


@pytest.mark.parametrize("norm", NORMS)
def test_norms_axes_and_lengths(device, norm):
    for dt in _dtypes(device):
        a = _data((4, 6, 10), dt, 1)
        x = mnp.asarray(a, device=device)
        for axis in (0, 1, -1):
            for n in (None, 4, 13):
                for f in ("fft", "ifft"):
                    _close(getattr(mnp.fft, f)(x, n=n, axis=axis, norm=norm),
                           getattr(np.fft, f)(a, n=n, axis=axis, norm=norm), dt)
        for s, axes in ((None, None), ((3, 8), (0, 1)), (None, (0, 2)), ((5, 7), (2, 0)), ((-1, 4), (1, 2))):
            npn = None if s is None else tuple(a.shape[ax] if v == -1 else v for v, ax in zip(s, axes))
            _close(mnp.fft.fftn(x, s=s, axes=axes, norm=norm), np.fft.fftn(a, s=npn, axes=axes, norm=norm), dt)
            _close(mnp.fft.ifftn(x, s=s, axes=axes, norm=norm), np.fft.ifftn(a, s=npn, axes=axes, norm=norm), dt)


@pytest.mark.parametrize("norm", NORMS)
def test_real_transforms(device, norm):
    for dt in _dtypes(device):
        rdt = _real(dt)
        a = _data((5, 12), dt, 2)
        r = a.real.copy()
        x, y = mnp.asarray(a, device=device), mnp.asarray(r, device=device)
        for axis in (0, -1):
            for n in (None, 7, 8, 20):
                _close(mnp.fft.rfft(y, n=n, axis=axis, norm=norm), np.fft.rfft(r, n=n, axis=axis, norm=norm), dt)
                _close(mnp.fft.ihfft(y, n=n, axis=axis, norm=norm), np.fft.ihfft(r, n=n, axis=axis, norm=norm), dt)
                _close(mnp.fft.irfft(x, n=n, axis=axis, norm=norm), np.fft.irfft(a, n=n, axis=axis, norm=norm), rdt)
                _close(mnp.fft.hfft(x, n=n, axis=axis, norm=norm), np.fft.hfft(a, n=n, axis=axis, norm=norm), rdt)
        b = _data((4, 6, 9), dt, 3)
        for s, axes in ((None, None), (None, (0, 2)), ((5, 8), (2, 0)), ((3, 4, 10), (0, 1, 2))):
            _close(mnp.fft.rfftn(mnp.asarray(b.real, device=device), s=s, axes=axes, norm=norm),
                   np.fft.rfftn(b.real, s=s, axes=axes, norm=norm), dt)
            _close(mnp.fft.irfftn(mnp.asarray(b, device=device), s=s, axes=axes, norm=norm),
                   np.fft.irfftn(b, s=s, axes=axes, norm=norm), rdt)
        # round trip of an odd length, and a real signal's spectrum through irfft
        _close(mnp.fft.irfft(mnp.fft.rfft(y, axis=0), n=5, axis=0), r, rdt)


def test_dtypes_and_special_values(device):
    f32 = np.array([1.0, 2.0, -1.0, 0.5], np.float32)
    got = mnp.fft.fft(mnp.asarray(f32, device=device))
    assert got.dtype == np.complex64  # a real input transforms in the complex dtype of its precision
    _close(got, np.fft.fft(f32).astype(np.complex64), "complex64")
    ints = mnp.asarray(np.array([1, 2, 3], np.int32), device=device)
    assert mnp.fft.fft(ints).dtype == mnp.__array_namespace_info__().default_dtypes(device=device)["complex floating"]
    assert mnp.fft.rfft(mnp.asarray(f32, device=device)).dtype == np.complex64
    assert mnp.fft.irfft(mnp.asarray(f32.astype(np.complex64), device=device)).dtype == np.float32
    c = np.array([1 + 1j, 2, -1j], np.complex64)
    _close(mnp.fft.hfft(mnp.asarray(c, device=device), norm=None), np.fft.hfft(c, norm=None), "float32")  # NumPy's None
    a = np.array([1, np.nan, 3, 4], np.complex64)
    assert np.isnan(np.asarray(mnp.fft.fft(mnp.asarray(a, device=device)))).all()  # NaN reaches every output
    e = mnp.fft.fft(mnp.asarray(np.zeros((0, 4), np.complex64), device=device))
    assert e.shape == (0, 4) and e.dtype == np.complex64


def test_frequencies_and_shifts(device):
    for n in (1, 2, 7, 8):
        for d in (1.0, 0.25):
            check(mnp.fft.fftfreq(n, d=d, device=device), np.fft.fftfreq(n, d).astype(np.float32), dtype=False,
                  rtol=1e-6)
            check(mnp.fft.rfftfreq(n, d=d, dtype=mnp.float32, device=device), np.fft.rfftfreq(n, d).astype(np.float32))
    assert mnp.fft.fftfreq(4, device=device).device == device
    b = np.arange(30.0, dtype=np.float32).reshape(5, 6)
    x = mnp.asarray(b, device=device)
    for axes in (None, 0, (1,), (0, 1), -1):
        check(mnp.fft.fftshift(x, axes=axes), np.fft.fftshift(b, axes=axes))
        check(mnp.fft.ifftshift(x, axes=axes), np.fft.ifftshift(b, axes=axes))
        check(mnp.fft.ifftshift(mnp.fft.fftshift(x, axes=axes), axes=axes), b)


def test_errors(device):
    x = mnp.asarray(np.ones((2, 3), np.complex64), device=device)
    for call in (lambda: mnp.fft.fft(x, n=0), lambda: mnp.fft.fft(x, axis=2), lambda: mnp.fft.fft(x, norm="none"),
                 lambda: mnp.fft.rfft(x), lambda: mnp.fft.irfft(x[:, :1]), lambda: mnp.fft.fftn(x, s=(2,), axes=(0, 1)),
                 lambda: mnp.fft.fftfreq(0, device=device), lambda: mnp.fft.fftfreq(4, dtype=mnp.int32, device=device),
                 lambda: mnp.fft.fft(mnp.asarray(np.complex64(1), device=device)), lambda: mnp.fft.fftn(x, axes=(0, 0))):
        with pytest.raises(mc.Error):
            call()


def test_kernels_stay_in_bounds_on_a_checked_device():
    """The CPU device's checked mode traps every out-of-bounds access: the passes (a mixed-radix and
    a Bluestein length) and the Hermitian completion read and write only their buffers."""
    dev = mc.Device("cpu", checked=True)
    a = _data((2, 12), "complex64", 4)
    x = mnp.asarray(a, device=dev)
    _close(mnp.fft.fft(x), np.fft.fft(a), "complex64")
    _close(mnp.fft.ifft(x[:, :11]), np.fft.ifft(a[:, :11]), "complex64")
    _close(mnp.fft.irfft(x, n=9), np.fft.irfft(a, n=9), "float32")


@pytest.mark.parametrize("n", [2, 12, 64, 77, 1000, 1024])
def test_threadgroup_kernel_matches_the_global_passes(device, n):
    """_kernels/fft_tg.py (short rows in one launch; what GPUs run for n <= 1024) gives the global
    passes' results to the bit, here on every device, the CPU included (as fibers)."""
    from metalcall.numpy._kernels import fft as passes
    from metalcall.numpy._kernels import fft_tg

    for dt in _dtypes(device):
        for rows in (1, 3):
            a = _data((rows, n), dt, n + rows)
            for inverse in (False, True):
                one = np.asarray(fft_tg.fft(device, device.asarray(a), rows, n, dt, inverse))
                ref = np.asarray(passes.fft(device, device.asarray(a), rows, n, dt, inverse))
                assert np.array_equal(one, ref)
    with pytest.raises(mc.ArgumentError):
        fft_tg.fft(device, device.asarray(np.zeros(2048, np.complex64)), 1, 2048, np.complex64)


@pytest.mark.parametrize("n, n1", [(96, 12), (336, 7), (2048, None), (4000, 1000), (2187, 243)])
def test_four_step_kernels_match_numpy(device, n, n1):
    """_kernels/fft_4step.py (what GPUs run for 1024 < n <= 1024^2: columns, twiddles, rows, in two
    launches of fft_regs.py's kernels) against numpy.fft on every device (the CPU as fibers), with
    splits chosen here to give small rows, radix 7, one-stage transforms, several butterflies per
    thread with idle threads (1000 = 8 * 5^3: 125 threads a lane, 200 radix-5 butterflies), five
    stages (3^5) and several rows of a batch."""
    from metalcall.numpy._kernels import fft_4step

    for dt in _dtypes(device) if n == 96 else ["complex64"]:
        for rows in (1, 3):
            a = _data((rows, n), dt, n + rows)
            for inverse in (False, True) if n == 96 else (False,):
                got = np.asarray(fft_4step.fft(device, device.asarray(a), rows, n, dt, inverse, n1=n1)).reshape(rows, n)
                _close(got, np.fft.ifft(a) * n if inverse else np.fft.fft(a), dt)
    assert fft_4step.split(1 << 20) == (1024, 1024) and fft_4step.split(1031 * 2) is None
    with pytest.raises(mc.ArgumentError):  # 97 is prime: no split into two rows of at most 1024
        fft_4step.fft(device, device.asarray(np.zeros(97 * 4, np.complex64)), 1, 97 * 4, np.complex64, n1=97)


def test_four_step_with_dynamic_threadgroup_memory(device, monkeypatch):
    """fft_4step's groups with their threadgroup array in the launch's dynamic threadgroup memory
    (what CUDA needs past 48 KiB; fft_probe tries it) and up to 16 lanes give numpy.fft's values."""
    from metalcall.numpy._kernels import fft_4step

    monkeypatch.setattr(fft_4step, "DYNAMIC", True)
    monkeypatch.setattr(fft_4step, "LANES", 16)
    monkeypatch.setattr(fft_4step, "_PLANS", {})
    for dt in _dtypes(device):
        a = _data((2, 64 * 32), dt, 5)
        got = np.asarray(fft_4step.fft(device, device.asarray(a), 2, 64 * 32, dt, False, n1=64)).reshape(2, -1)
        _close(got, np.fft.fft(a), dt)


@pytest.mark.parametrize("family", ["amd", "intel"])
def test_gpu_paths_on_the_metal_simulator(family):
    """The simulated Metal GPUs take the GPU paths (threadgroup kernel for short rows, sized from each
    pipeline's limit; global passes and Bluestein for long ones) and complex64 arithmetic."""
    if "metal-sim" not in mc.backends():
        pytest.skip("metalcall was built without the metal-sim backend")
    dev = mc.Device("metal-sim", family=family)
    for n in (12, 1024, 4096, 97, 3 * 1024):
        a = _data((2, n), "complex64", n)
        x = mnp.asarray(a, device=dev)
        _close(mnp.fft.fft(x), np.fft.fft(a), "complex64")
        _close(mnp.fft.ifft(x, norm="ortho"), np.fft.ifft(a, norm="ortho"), "complex64")
    _close(mnp.fft.irfft(x, n=20), np.fft.irfft(a, n=20), "float32")
