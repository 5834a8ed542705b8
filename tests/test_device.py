"""Device selection and properties (DESIGN.md §2: mc.Device(), get_devices())."""

from __future__ import annotations

import json

import numpy as np
import pytest

import metalcall as mc
from mctest import GOOD_SRC, check_usable


def test_get_devices_lists_every_backend():
    infos = mc.get_devices()
    assert len(infos) >= 1
    backends = mc.backends()
    assert "cpu" in backends, "the CPU backend is always built in"
    for info in infos:
        assert isinstance(info, mc.DeviceInfo)
        assert info.backend in backends
        assert isinstance(info.name, str) and info.name
        assert info.index >= 0
        assert info.max_threads_per_threadgroup > 0
        assert info.memory_size > 0
        assert repr(info).startswith("<metalcall.DeviceInfo")
        d = info.as_dict()
        assert d["backend"] == info.backend and d["name"] == info.name
    assert any(i.backend == "cpu" for i in infos)


def test_default_device_opens_and_runs():
    dev = mc.Device()
    assert dev.backend in mc.backends()
    check_usable(dev)


def test_default_device_is_the_first_listed(run_python):
    # Without METALCALL_DEVICE, Device() is the best device, which get_devices() lists first.
    r = run_python(
        "import metalcall as mc\n"
        "d = mc.Device(); first = mc.get_devices()[0]\n"
        "print(d.backend == first.backend and d.index == first.index)\n",
        env={"METALCALL_DEVICE": None},
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True"


def test_device_by_backend_name_cpu(cpu_device):
    assert cpu_device.backend == "cpu"
    assert cpu_device.index == 0
    assert mc.Device("CPU") == cpu_device, "backend names are case-insensitive"
    assert mc.Device("cpu:0") == cpu_device
    check_usable(cpu_device)


def test_device_by_index_matches_get_devices():
    infos = mc.get_devices()
    for i, info in enumerate(infos):
        dev = mc.Device(i)
        assert dev.backend == info.backend
        assert dev.index == info.index
        assert dev.name == info.name
    # NumPy integers are accepted as indices too.
    assert mc.Device(np.int64(0)) == mc.Device(0)


def test_device_by_name_from_get_devices():
    info = mc.get_devices()[0]
    dev = mc.Device(info.name)
    assert dev.backend == info.backend and dev.index == info.index


def test_same_spec_gives_the_same_device():
    a, b = mc.Device("cpu"), mc.Device("cpu")
    assert a == b
    assert hash(a) == hash(b)
    assert "cpu" in repr(a)


def test_device_properties(device):
    assert isinstance(device.name, str) and device.name
    assert device.backend in ("cpu", "metal", "cuda", "metal-sim")
    assert device.max_threads_per_threadgroup >= 32
    assert device.simd_width in (1, 4, 8, 16, 32, 64)
    assert isinstance(device.unified_memory, bool)
    assert device.memory_size > 0
    assert device.threadgroup_memory_length > 0
    info = device.info
    assert info.name == device.name and info.backend == device.backend
    assert info.max_threads_per_threadgroup == device.max_threads_per_threadgroup
    assert info.memory_size == device.memory_size


def test_cpu_device_properties(cpu_device):
    # The CPU backend mirrors Apple GPUs' limits so kernels stay portable (DESIGN.md §3).
    assert cpu_device.max_threads_per_threadgroup == 1024
    assert cpu_device.simd_width == 32
    assert cpu_device.unified_memory is True
    assert cpu_device.threadgroup_memory_length == 32 * 1024


@pytest.mark.parametrize(
    "spec",
    [
        "no-such-backend",
        "cpu:7",  # index out of range
        "cpu:x",
        "cpu:",
        "cpu:-1",
        "",  # empty string is not "best"; falls to env/best — handled separately below
        10**6,  # index out of range
        # -1 is metalcompute's default device (P1.5 item 7): tests/test_metalcompute_compat.py
        2**32,
        2**80,
        True,
        1.5,
        b"cpu",
        ["cpu"],
    ],
    ids=lambda s: repr(s)[:20],
)
def test_bad_device_specs_raise_device_error(spec):
    if spec == "":
        # An empty name means "the default" (like None); it must not crash.
        dev = mc.Device(spec)
        assert dev.backend in mc.backends()
        return
    with pytest.raises(mc.DeviceError) as info:
        mc.Device(spec)
    assert str(info.value), "a DeviceError says why"
    check_usable(mc.Device("cpu"))


def test_device_error_message_is_helpful():
    with pytest.raises(mc.DeviceError, match="cpu"):
        mc.Device("no-such-backend")  # lists the built-in backends
    with pytest.raises(mc.DeviceError, match="out of range"):
        mc.Device(len(mc.get_devices()))


@pytest.mark.parametrize("backend", ["metal", "cuda"])
def test_missing_gpu_backend_raises_device_error(backend):
    if backend in mc.backends() and any(i.backend == backend for i in mc.get_devices()):
        pytest.skip(f"{backend} is available here")
    with pytest.raises(mc.DeviceError, match=backend):
        mc.Device(backend)
    check_usable(mc.Device("cpu"))


def test_checked_is_keyword_only():
    with pytest.raises(TypeError):
        mc.Device("cpu", True)  # noqa: FBT003


def test_metalcall_device_env_selects_cpu(run_python):
    code = (
        "import json, numpy as np, metalcall as mc\n"
        f"src = {GOOD_SRC!r}\n"
        "dev = mc.Device()\n"
        "a = np.arange(5, dtype=np.float32); c = np.zeros(5, np.float32)\n"
        "dev.compile(src).mul(5, a, a, c)\n"
        "print(json.dumps({'backend': dev.backend, 'c': c.tolist()}))\n"
    )
    r = run_python(code, env={"METALCALL_DEVICE": "cpu"})
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["backend"] == "cpu"
    assert out["c"] == [0.0, 1.0, 4.0, 9.0, 16.0]


def test_metalcall_device_env_bad_value_is_device_error(run_python):
    code = (
        "import metalcall as mc\n"
        "try:\n"
        "    mc.Device()\n"
        "except mc.DeviceError as e:\n"
        "    print('DeviceError:', e)\n"
        "print('explicit:', mc.Device('cpu').backend)\n"
    )
    r = run_python(code, env={"METALCALL_DEVICE": "no-such-backend"})
    assert r.returncode == 0, r.stderr
    assert "DeviceError:" in r.stdout and "no-such-backend" in r.stdout
    # An explicit spec wins over the environment.
    assert "explicit: cpu" in r.stdout
