"""Host arrays that lie inside a Buffer's memory (``np.asarray(buf)[4:]``, ``buf.numpy()`` sliced, a
memoryview of a Buffer) are that Buffer at an offset (P2.1 defect 2's last class): a call binds them
in place, hazards are tracked on the Buffer, and calls that reach the memory through the view and
through the Buffer in one batch or replay see each other's writes in call order. Before, the view
was foreign host memory: staged by the Metal backend, the sandboxed CPU device and CUDA, and copied
back only when the submission ended, so a write through one was lost or ordered wrongly against the
other. Each test checks values against NumPy on every device, the sandbox and two Metal simulator
families (Apple and AMD: different page sizes and planning)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import metalcall as mc
from mctest import device_params, metal_sim_only

SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void scale(device float* x [[buffer(0)]], constant float& s [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
    x[i] = x[i] * s;
}
kernel void add_one(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    x[i] = x[i] + 1.0f;
}
// out[i] = a[i + shift]: reads the Buffer where a view of it starts `shift` elements in.
kernel void read_at(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                    constant uint& shift [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    out[i] = a[i + shift];
}
kernel void add_constant(constant float* x [[buffer(0)]], device float* out [[buffer(1)]],
                         uint i [[thread_position_in_grid]]) {
    out[i] = out[i] + x[i];
}
kernel void fill_from(constant float& v [[buffer(0)]], device float* out [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
    out[i] = v;
}
"""

N = 1000
SHIFT = 4  # elements: a view 16 bytes into its Buffer

def _params() -> list:
    params = list(device_params())
    if sys.platform.startswith("linux") and "cpu" in mc.backends() and not metal_sim_only():
        params.append(pytest.param(("cpu", 0, "sandbox"), id="cpu-sandbox"))
    for family in ("apple7", "amd"):
        params.append(pytest.param(("metal-sim", 0, family), id=f"metal-sim-{family}"))
    return params


@pytest.fixture(params=_params())
def dev(request) -> mc.Device:
    """Every device of the suite, the sandbox, and the Metal simulator's Apple and AMD families."""
    backend, index, *extra = request.param
    if backend == "metal-sim":
        return mc.Device("metal-sim", family=extra[0]) if extra else mc.Device("metal-sim")
    return mc.Device(f"{backend}:{index}", sandbox=extra == ["sandbox"])


def start(dev: mc.Device) -> tuple[mc.Library, mc.Buffer, np.ndarray]:
    lib = dev.compile(SRC)
    buf = dev.asarray(np.arange(N + SHIFT, dtype=np.float32))
    return lib, buf, np.arange(N + SHIFT, dtype=np.float32)


@pytest.mark.parametrize("spelling", ["asarray", "numpy", "memoryview"])
def test_writer_through_a_view_then_reader_through_the_buffer(dev, spelling):
    lib, buf, model = start(dev)
    if spelling == "asarray":
        view = np.asarray(buf)[SHIFT:]
    elif spelling == "numpy":
        view = buf.numpy()[SHIFT:]
    else:
        view = np.frombuffer(memoryview(buf), np.float32)[SHIFT:]
    out = dev.empty(N, np.float32)
    with dev.batch():
        lib.scale(N, view, np.float32(3.0))
        lib.read_at(N, buf, out, np.uint32(SHIFT))
    model[SHIFT:] *= np.float32(3.0)
    np.testing.assert_array_equal(np.asarray(out), model[SHIFT:])
    np.testing.assert_array_equal(np.asarray(buf), model)


def test_writer_through_the_buffer_then_reader_through_a_view(dev):
    lib, buf, model = start(dev)
    view = np.asarray(buf)[SHIFT:]
    out = dev.empty(N, np.float32)
    with dev.batch():
        lib.add_one(N + SHIFT, buf)
        lib.read_at(N, view, out, np.uint32(0))
    model += 1
    np.testing.assert_array_equal(np.asarray(out), model[SHIFT:])


def test_two_writers_apply_in_call_order(dev):
    """A write through the Buffer, one through a view, one through the Buffer again: (x+1)*2+1,
    not a copy-back of the view's result over the later write (or under the earlier one)."""
    lib, buf, model = start(dev)
    view = np.asarray(buf)[SHIFT:]
    with dev.batch():
        lib.add_one(N + SHIFT, buf)
        lib.scale(N, view, np.float32(2.0))
        lib.add_one(N + SHIFT, buf)
    model += 1
    model[SHIFT:] *= 2
    model += 1
    np.testing.assert_array_equal(np.asarray(buf), model)


def test_two_views_of_one_buffer(dev):
    lib, buf, model = start(dev)
    whole = np.asarray(buf)
    first, second = whole[:N], whole[SHIFT:]
    with dev.batch():
        lib.scale(N, first, np.float32(2.0))
        lib.add_one(N, second)
    model[:N] *= 2
    model[SHIFT:] += 1
    np.testing.assert_array_equal(np.asarray(buf), model)


def test_one_call_binds_a_buffer_and_a_view_of_it(dev):
    """The Buffer read whole and a view of its second half written, in one call."""
    lib = dev.compile(SRC)
    buf = dev.asarray(np.arange(2 * N, dtype=np.float32))
    lib.read_at(N, buf, np.asarray(buf)[N:], np.uint32(0))  # buf[N:] = buf[:N]
    model = np.arange(2 * N, dtype=np.float32)
    model[N:] = model[:N]
    np.testing.assert_array_equal(np.asarray(buf), model)


def test_replays_order_view_and_buffer(dev):
    lib, buf, model = start(dev)
    view = np.asarray(buf)[SHIFT:]
    out = dev.empty(N, np.float32)
    with dev.record() as g:
        lib.scale(N, view, np.float32(2.0))
        lib.add_one(N + SHIFT, buf)
        lib.read_at(N, buf, out, np.uint32(SHIFT))
    for _ in range(3):
        g.replay()
        model[SHIFT:] *= 2
        model += 1
        np.testing.assert_array_equal(np.asarray(out), model[SHIFT:])
    np.testing.assert_array_equal(np.asarray(buf), model)


def test_constant_views_after_a_writer(dev):
    """A view bound to `constant float*` (Metal: an offset that is no multiple of 256 gets an aligned
    copy) and to `constant float&` reads what an earlier call of the batch wrote through the Buffer."""
    lib, buf, model = start(dev)
    whole = np.asarray(buf)
    out = dev.asarray(np.ones(256, np.float32))
    last = dev.empty(8, np.float32)
    with dev.batch():
        lib.add_one(N + SHIFT, buf)
        lib.add_constant(256, whole[20:276], out)
        lib.fill_from(8, whole[7:8].reshape(()), last)
    model += 1
    np.testing.assert_array_equal(np.asarray(out), model[20:276] + 1)
    np.testing.assert_array_equal(np.asarray(last), np.full(8, model[7]))


def test_a_view_is_waited_for_and_the_buffer_is_busy_until_then(dev):
    """A call with a view returns when it is done (the caller may read the view at once), and the
    Buffer's own hazard tracking knows of the call."""
    lib, buf, model = start(dev)
    view = np.asarray(buf)[SHIFT:]
    lib.scale(N, view, np.float32(5.0))
    model[SHIFT:] *= 5
    np.testing.assert_array_equal(view, model[SHIFT:])
    np.testing.assert_array_equal(buf.numpy(), model)


def test_read_only_view_of_a_buffer_is_still_refused_for_writing(dev):
    lib, buf, _ = start(dev)
    view = np.asarray(buf)[SHIFT:]
    view.flags.writeable = False
    with pytest.raises(mc.ArgumentError, match="read-only"):
        lib.add_one(N, view)


def test_view_of_another_devices_buffer_is_host_memory(dev):
    """Memory of another device's Buffer is foreign host memory here, as before: used or staged, and
    written back."""
    lib = dev.compile(SRC)
    other = mc.Device("cpu").asarray(np.arange(N + SHIFT, dtype=np.float32))
    view = np.asarray(other)[SHIFT:]
    lib.scale(N, view, np.float32(2.0))
    np.testing.assert_array_equal(np.asarray(other)[SHIFT:], np.arange(SHIFT, N + SHIFT, dtype=np.float32) * 2)
