"""Property test: random elementwise expressions over broadcast shapes, dtypes and strided views
agree with NumPy (hypothesis). The op set is small so that few distinct kernels are compiled."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import metalcall.numpy as mnp

OPS = [
    ("add", lambda a, b: a + b),
    ("multiply", lambda a, b: a * b),
    ("maximum", np.maximum),
    ("subtract", lambda a, b: a - b),
]
DTYPES = ["int32", "float32", "uint8"]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4),
    dtype=st.sampled_from(DTYPES),
    op=st.sampled_from(range(len(OPS))),
    reverse=st.booleans(),
    data=st.data(),
)
def test_binary_broadcast_matches_numpy(device, shapes, dtype, op, reverse, data):
    s1, s2 = shapes.input_shapes
    elems = st.integers(0, 50) if dtype != "float32" else st.floats(-10, 10, width=32)
    a = data.draw(hnp.arrays(dtype, s1, elements=elems))
    b = data.draw(hnp.arrays(dtype, s2, elements=elems))
    x, y = mnp.asarray(a, device=device), mnp.asarray(b, device=device)
    if reverse and x.ndim:  # read through a reversed (negative-stride) view
        x, a = mnp.flip(x, axis=0), np.flip(a, axis=0)
    name, ref = OPS[op]
    got = getattr(mnp, name)(x, y) * 2
    with np.errstate(all="ignore"):
        want = ref(a, b) * 2
    out = np.asarray(got)
    assert out.shape == want.shape and out.dtype == want.dtype
    np.testing.assert_allclose(out, want, rtol=1e-6)
