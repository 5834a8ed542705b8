"""Features that exist only on the Metal backend: loading compiled .metallib files.

On other backends load_library() is a DeviceError that says what to do instead."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import metalcall as mc

SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void scale(const device float* a [[buffer(0)]], device float* c [[buffer(1)]],
                  constant float& k [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    c[i] = a[i] * k;
}
"""


def metal_device() -> mc.Device:
    if not any(d.backend == "metal" for d in mc.get_devices()):
        pytest.skip("needs the Metal backend (macOS with a Metal GPU)")
    return mc.Device("metal")


def build_metallib(tmp_path) -> bytes:
    """Compiles SRC with Apple's offline compiler (Xcode), or skips."""
    if shutil.which("xcrun") is None:
        pytest.skip("needs xcrun (Xcode) to build a .metallib")
    source = tmp_path / "scale.metal"
    source.write_text(SRC)
    air, lib = tmp_path / "scale.air", tmp_path / "scale.metallib"
    for command in (
        ["xcrun", "-sdk", "macosx", "metal", "-c", str(source), "-o", str(air)],
        ["xcrun", "-sdk", "macosx", "metallib", str(air), "-o", str(lib)],
    ):
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"the Metal offline compiler is not installed: {done.stderr.strip()[:200]}")
    return lib.read_bytes()


def test_load_metallib_from_bytes_and_path(tmp_path):
    dev = metal_device()
    data = build_metallib(tmp_path)
    a = np.arange(32, dtype=np.float32)
    for lib in (dev.load_library(data), dev.load_library(tmp_path / "scale.metallib")):
        assert "scale" in lib.function_names
        c = np.zeros_like(a)
        lib.scale(32, a, c, np.float32(1.5).tobytes())
        np.testing.assert_array_equal(c, a * 1.5)


def test_corrupt_metallib_is_a_clear_error(tmp_path):
    dev = metal_device()
    with pytest.raises(mc.Error):
        dev.load_library(b"not a metallib")
    c = np.zeros(4, np.float32)
    dev.compile(SRC).scale(4, np.ones(4, np.float32), c, 2.0)
    np.testing.assert_array_equal(c, 2.0)


@pytest.mark.parametrize("backend", [b for b in ("cpu", "cuda") if b in mc.backends()])
def test_load_library_elsewhere_is_a_device_error(backend):
    if not any(d.backend == backend for d in mc.get_devices()):
        pytest.skip(f"no {backend} device here")
    dev = mc.Device(backend)
    with pytest.raises(mc.DeviceError, match="Metal"):
        dev.load_library(b"\x00" * 16)
    c = np.zeros(4, np.float32)
    dev.compile(SRC).scale(4, np.ones(4, np.float32), c, 3.0)  # still usable
    np.testing.assert_array_equal(c, 3.0)


# ---- staged textures: Metal makes only single-level 2-D textures over a buffer ----------

STAGED_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void bump3d(texture3d<float, access::read> src [[texture(0)]],
                   texture3d<float, access::write> dst [[texture(1)]],
                   uint3 p [[thread_position_in_grid]]) {
    dst.write(src.read(p) + float4(1.0f), p);
}
kernel void level_down(texture2d<float, access::read> src [[texture(0)]],
                       texture2d<float, access::write> dst [[texture(1)]], constant uint& lod [[buffer(0)]],
                       uint2 p [[thread_position_in_grid]]) {
    dst.write(src.read(2 * p, lod) * 2.0f, p, lod + 1);
}
"""


def test_staged_textures_round_trip(rng):
    """A 3-D texture is copied into a texture of its own and back; a mipmapped texture bound
    twice (read and write) is one texture, so the kernel's write reaches the buffer."""
    dev = metal_device()
    lib = dev.compile(STAGED_SRC)
    raw = rng.uniform(0, 1, (3, 4, 5, 4)).astype(np.float32)
    src, dst = dev.texture_from(raw), dev.texture((3, 4, 5), "rgba32float")
    lib.bump3d((5, 4, 3), textures=[src, dst])
    np.testing.assert_array_equal(np.asarray(dst), raw + 1)
    np.testing.assert_array_equal(np.asarray(src), raw)  # read-only: not copied back

    img = rng.uniform(0, 1, (8, 8, 4)).astype(np.float32)
    t = dev.texture_from(img, mip_levels=2)
    lib.level_down((4, 4), np.array([0], np.uint32), textures=[t, t])
    np.testing.assert_array_equal(t.level(1), img[::2, ::2] * 2)
    np.testing.assert_array_equal(np.asarray(t), img)


def test_metal_texture_size_limits():
    dev = metal_device()
    with pytest.raises(mc.ArgumentError, match=r"\[metal\] a texture3d is at most 2048"):
        dev.texture((4, 4, 4096), "r32float")
    with pytest.raises(mc.ArgumentError, match=r"\[metal\] a texture2d_array has at most 2048 slices"):
        dev.texture((4096, 4, 4), "r32float", type="texture2d_array")
    with pytest.raises(mc.ArgumentError, match=r"\[metal\] a texture2d is at most 16384"):
        dev.texture((4, 20000), "r8unorm")
    assert dev.texture((4, 4, 2048), "r32float").texture_type == "texture3d"  # at the limit, still usable
