"""MLX's FFT kernels (mlx/backend/metal/kernels/fft.metal) run on metalcall against NumPy's FFT:
complex-to-complex transforms of 8 and 16 points in threadgroup memory (radix-8, and radix-4 twice)
and their inverses. The file's member functions include explicit specialisations defined outside
their class (`template <> METAL_FUNC void ReadWriter<float, float2>::load_padded(…) const thread`),
which checked mode refused before 2026-12-05 (a call's `elem1 * conj, w_k[index]` read as
declarators) and whose `write()` did not compile on the CPU (the class's `write()` reaches a
barrier and took the SIMD-group frame parameter, the specialisation did not). Every device, the CPU
in checked mode too. The launch follows MLX's fft kernel: one thread per DFT here (grid z, the
threads per DFT, is 1), `elems_per_thread_` the whole DFT; the public file is read at test time."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from corpus_support import kernel, require
from mctest import device_params, metal_sim_only

FFT = "mlx/mlx/backend/metal/kernels/fft.metal"
STEPS = ["radix_13_steps_", "radix_11_steps_", "radix_8_steps_", "radix_7_steps_", "radix_6_steps_", "radix_5_steps_",
         "radix_4_steps_", "radix_3_steps_", "radix_2_steps_", "rader_13_steps_", "rader_11_steps_", "rader_8_steps_",
         "rader_7_steps_", "rader_6_steps_", "rader_5_steps_", "rader_4_steps_", "rader_3_steps_", "rader_2_steps_"]


@pytest.fixture(params=device_params() + ([pytest.param(("cpu", 0, "checked"), id="cpu-checked")]
                                           if "cpu" in mc.backends() and not metal_sim_only() else []))
def device(request):
    backend, index, *checked = request.param
    return mc.Device("cpu", checked=True) if checked else mc.Device(f"{backend}:{index}")


def constants(n: int, steps: dict, inverse: bool) -> dict:
    values = {name: 0 for name in STEPS}
    values.update(steps)
    values.update({"inv_": inverse, "is_power_of_2_": True, "elems_per_thread_": n, "rader_m_": 1,
                   "use_bluestein_twiddle_table_": False})
    return values


@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("n, steps", [(8, {"radix_8_steps_": 1}), (16, {"radix_4_steps_": 2})])
def test_mlx_fft_c2c(device, corpus, n, steps, inverse):
    name = "fft_mem_256_float2_float2"
    k = kernel(device, require(FFT), name, include_dirs=(corpus / "mlx",), constants=constants(n, steps, inverse))
    rng = np.random.default_rng(n + inverse)
    batch = 3
    x = (rng.standard_normal((batch, n)) + 1j * rng.standard_normal((batch, n))).astype(np.complex64)
    out = np.zeros_like(x)
    # One DFT per threadgroup: grid (batch, 1, 1), threadgroup (1, 1, 1).
    k((batch, 1, 1), x.view(np.float32), out.view(np.float32), np.int32(n), np.int32(batch), threadgroup=(1, 1, 1))
    want = np.fft.ifft(x, axis=1) if inverse else np.fft.fft(x, axis=1)
    np.testing.assert_allclose(out, want.astype(np.complex64), rtol=1e-5, atol=1e-5 * np.abs(want).max())
