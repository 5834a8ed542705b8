"""Several devices: each GPU is a Device ("cuda:0", "cuda:1"), a Buffer belongs to the device that
made it (using it in another device's kernel is an ArgumentError naming both), and buf.to(dev)
copies it to any device. Runs on the CPU here; the cross-device checks need a second device."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc

FILL_SRC = """
kernel void fill(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    a[i] = float(i) * 2.0f + 1.0f;
}
"""

CUDA_DEVICES = [d for d in mc.get_devices() if d.backend == "cuda"]


def _address(buf: mc.Buffer) -> int:
    return np.asarray(buf).__array_interface__["data"][0]


def test_to_copies_onto_the_same_device(device):
    buf = device.asarray(np.arange(12, dtype=np.int32).reshape(3, 4))
    for target in (device, f"{device.backend}:{device.index}"):
        copy = buf.to(target)
        assert isinstance(copy, mc.Buffer) and copy.device == device
        assert copy.shape == (3, 4) and copy.dtype == np.int32
        assert _address(copy) != _address(buf)  # always a new Buffer
        np.testing.assert_array_equal(np.asarray(copy), np.asarray(buf))
    np.asarray(copy)[0, 0] = 99
    assert np.asarray(buf)[0, 0] == 0


def test_to_and_from_the_cpu(device, cpu_device):
    host = cpu_device.asarray(np.linspace(0, 1, 257, dtype=np.float32))
    on_device = host.to(device)
    assert on_device.device == device
    back = on_device.to(cpu_device)
    assert back.device == cpu_device
    np.testing.assert_array_equal(np.asarray(back), np.asarray(host))


def test_to_waits_for_pending_work(device, cpu_device):
    fill = device.compile(FILL_SRC).fill
    n = 1 << 16
    buf = device.empty(n, np.float32)
    handle = fill(n, buf)  # kept: the call may still run when .to() starts
    out = buf.to(cpu_device)
    handle.wait()
    np.testing.assert_array_equal(np.asarray(out), np.arange(n, dtype=np.float32) * 2 + 1)


def test_to_rejects_non_devices(cpu_device):
    buf = cpu_device.empty(3)
    with pytest.raises(TypeError):
        buf.to(3)
    with pytest.raises(mc.DeviceError):
        buf.to("nosuchbackend")


def test_checked_device_shares_buffers_with_the_plain_one(cpu_device):
    # A Buffer belongs to a backend device, not to one set of Device options.
    checked = mc.Device("cpu", checked=True)
    buf = cpu_device.zeros(8)
    checked.compile(FILL_SRC).fill(8, buf).wait()
    np.testing.assert_array_equal(np.asarray(buf), np.arange(8, dtype=np.float32) * 2 + 1)


def _other_devices(device):
    return [mc.Device(f"{d.backend}:{d.index}") for d in mc.get_devices()
            if (d.backend, d.index) != (device.backend, device.index)]


def test_buffer_of_another_device_is_an_argument_error(device):
    others = _other_devices(device)
    if not others:
        pytest.skip("only one device here: a Buffer cannot meet another device's kernel")
    fill = device.compile(FILL_SRC).fill
    for other in others:
        foreign = other.zeros(4)
        name = f"{device.backend}:{device.index}"
        with pytest.raises(mc.ArgumentError, match=rf"argument 0 'a'.*lives on {other.backend}:{other.index} "
                                                   rf"but the kernel runs on {name}.*buf\.to\(device\)"):
            fill(4, foreign)
        # The explicit way: copy it over, run, copy back.
        moved = foreign.to(device)
        fill(4, moved).wait()
        np.testing.assert_array_equal(np.asarray(moved.to(other)), [1, 3, 5, 7])


def test_cuda_devices_are_indexed():
    if not CUDA_DEVICES:
        pytest.skip("no CUDA device")
    for info in CUDA_DEVICES:
        dev = mc.Device(f"cuda:{info.index}")
        assert (dev.backend, dev.index) == ("cuda", info.index)
        assert dev.zeros(2).__dlpack_device__() == (2, info.index)


def test_peer_copy_between_two_gpus():
    if len(CUDA_DEVICES) < 2:
        pytest.skip(f"needs 2 CUDA GPUs for a peer copy; this machine has {len(CUDA_DEVICES)}")
    d0, d1 = mc.Device("cuda:0"), mc.Device("cuda:1")
    fill = d0.compile(FILL_SRC).fill
    a = d0.empty(1 << 20, np.float32)
    fill(a.size, a)
    b = a.to(d1)
    assert b.device == d1
    np.testing.assert_array_equal(np.asarray(b), np.arange(1 << 20, dtype=np.float32) * 2 + 1)
    with pytest.raises(mc.ArgumentError, match="lives on cuda:1 but the kernel runs on cuda:0"):
        fill(4, b)
    np.testing.assert_array_equal(np.asarray(b.to(d0)), np.asarray(a))
