"""Production MSL kernels of public projects (MLX, ggml/llama.cpp) run on metalcall and
checked against NumPy models written here from what each kernel computes (issue P1.6
point 4). The public files are read where they lie (corpus_support.corpus_root()) and
flattened by tools/msl_corpus_survey.py; nothing of them is copied into the project.
Grids, threadgroups and argument structs follow the projects' own host code."""

from __future__ import annotations

import numpy as np
import pytest

from corpus_support import c_args, kernel, require

MLX_KERNELS = "mlx/mlx/backend/metal/kernels"
GGML_METAL = "ggml/src/ggml-metal/ggml-metal.metal"
GGML_IMPL = "ggml/src/ggml-metal/ggml-metal-impl.h"


def mlx_kernel(dev, corpus, file, name, **kw):
    path = require(f"{MLX_KERNELS}/{file}")
    return kernel(dev, path, name, include_dirs=(corpus / "mlx",), **kw)


def ggml_kernel(dev, corpus, name, **kw):
    path = require(GGML_METAL)
    return kernel(dev, path, name, include_dirs=(corpus / "ggml/src", corpus / "ggml/src/ggml-metal"), **kw)


def ggml_args(struct, **values):
    return c_args(require(GGML_IMPL), struct, **values)


TYPES = {"float32": np.float32, "float16": np.float16}
# fp32 results to a few ulps; fp16 ones to half's precision (11 bits).
TOL = {"float32": dict(rtol=2e-6, atol=1e-7), "float16": dict(rtol=2e-3, atol=1e-3)}


# ---- 1. MLX elementwise (unary.metal, binary.metal): contiguous kernels -------------------------
# unary_v / binary_vv take (in..., out, constant uint& size); the "v_"/"vv_" instantiations
# do one element per thread, the "vn_"/"vvn_" ones 8/sizeof(T) elements per thread (the last
# thread's tail handled by its size check), so the grid is ceil(size / n).

UNARY = {"Exp": np.exp, "Abs": np.abs}


@pytest.mark.parametrize("tname", ["float32", "float16"])
@pytest.mark.parametrize("variant", ["v", "vn"])
@pytest.mark.parametrize("op", sorted(UNARY))
def test_mlx_unary(device, corpus, rng, op, variant, tname):
    t = TYPES[tname]
    name = f"{variant}_{op}{tname}{tname}"
    k = mlx_kernel(device, corpus, "unary.metal", name)
    size = 1003  # not a multiple of the elements per thread
    x = rng.uniform(-4, 4, size).astype(t)
    out = np.zeros(size, t)
    per_thread = 1 if variant == "v" else 8 // np.dtype(t).itemsize
    k(-(-size // per_thread), x, out, np.uint32(size))
    want = UNARY[op](x.astype(np.float64))
    np.testing.assert_allclose(out.astype(np.float64), want, **TOL[tname])


@pytest.mark.parametrize("tname", ["float32", "float16"])
@pytest.mark.parametrize("variant", ["vv", "vvn"])
def test_mlx_binary_add(device, corpus, rng, variant, tname):
    t = TYPES[tname]
    k = mlx_kernel(device, corpus, "binary.metal", f"{variant}_Add{tname}")
    size = 1001
    a = rng.uniform(-10, 10, size).astype(t)
    b = rng.uniform(-10, 10, size).astype(t)
    c = np.zeros(size, t)
    per_thread = 1 if variant == "vv" else 8 // np.dtype(t).itemsize
    k(-(-size // per_thread), a, b, c, np.uint32(size))
    np.testing.assert_array_equal(c, a + b)  # one rounding, as NumPy's own add
