"""Device.generate_mipmaps(texture): fills mip levels 1.. of a texture from level 0, as
Metal's blit command generateMipmapsForTexture: does, with MSL kernels of our own run on
the texture's device (docs/design.md "Textures and samplers").

Each level is the box filter of the one above: the mean of a 2x2 block of texels (2x2x2 in
a 3-D texture) at twice the coordinates; where the level above has an odd size, its last
row / column / slice counts for both of the block's texels on that axis. Metal leaves
its filter to the implementation; this one is exact float arithmetic on the values a
kernel reads (normalized formats decode, average, then round as a kernel's write does).
"""

from __future__ import annotations

import threading

import numpy as np

from ._core import ArgumentError, Device, Texture

_SOURCE = """
#include <metal_stdlib>
using namespace metal;

// The texel of level lod at q, its neighbours at q + 1 clamped to the level's last texel.
kernel void mc_mip_texture2d(texture2d<float, access::read> src [[texture(0)]],
                             texture2d<float, access::write> dst [[texture(1)]],
                             constant uint& lod [[buffer(0)]], uint2 p [[thread_position_in_grid]]) {
    const uint2 last = uint2(src.get_width(lod) - 1, src.get_height(lod) - 1);
    const uint2 q = min(p * 2, last), r = min(q + 1, last);
    const float4 sum = src.read(q, lod) + src.read(uint2(r.x, q.y), lod) + src.read(uint2(q.x, r.y), lod) + src.read(r, lod);
    dst.write(sum * 0.25f, p, lod + 1);
}

// A layer (array slice or cube face) of level lod + 1 from the same layer of level lod.
template <typename Src, typename Dst>
void down_layer(Src src, Dst dst, uint lod, uint3 p) {
    const uint2 last = uint2(src.get_width(lod) - 1, src.get_height(lod) - 1);
    const uint2 q = min(p.xy * 2, last), r = min(q + 1, last);
    const float4 sum = src.read(q, p.z, lod) + src.read(uint2(r.x, q.y), p.z, lod) + src.read(uint2(q.x, r.y), p.z, lod) +
                       src.read(r, p.z, lod);
    dst.write(sum * 0.25f, p.xy, p.z, lod + 1);
}

kernel void mc_mip_texture2d_array(texture2d_array<float, access::read> src [[texture(0)]],
                                   texture2d_array<float, access::write> dst [[texture(1)]],
                                   constant uint& lod [[buffer(0)]], uint3 p [[thread_position_in_grid]]) {
    down_layer(src, dst, lod, p);
}

kernel void mc_mip_texturecube(texturecube<float, access::read> src [[texture(0)]],
                               texturecube<float, access::write> dst [[texture(1)]],
                               constant uint& lod [[buffer(0)]], uint3 p [[thread_position_in_grid]]) {
    down_layer(src, dst, lod, p);
}

// A cube array's layer p.z is face p.z % 6 of cube p.z / 6.
kernel void mc_mip_texturecube_array(texturecube_array<float, access::read> src [[texture(0)]],
                                     texturecube_array<float, access::write> dst [[texture(1)]],
                                     constant uint& lod [[buffer(0)]], uint3 p [[thread_position_in_grid]]) {
    const uint2 last = uint2(src.get_width(lod) - 1, src.get_height(lod) - 1);
    const uint2 q = min(p.xy * 2, last), r = min(q + 1, last);
    const uint face = p.z % 6, cube = p.z / 6;
    const float4 sum = src.read(q, face, cube, lod) + src.read(uint2(r.x, q.y), face, cube, lod) +
                       src.read(uint2(q.x, r.y), face, cube, lod) + src.read(r, face, cube, lod);
    dst.write(sum * 0.25f, p.xy, face, cube, lod + 1);
}

kernel void mc_mip_texture3d(texture3d<float, access::read> src [[texture(0)]],
                             texture3d<float, access::write> dst [[texture(1)]],
                             constant uint& lod [[buffer(0)]], uint3 p [[thread_position_in_grid]]) {
    const uint3 last = uint3(src.get_width(lod) - 1, src.get_height(lod) - 1, src.get_depth(lod) - 1);
    const uint3 q = min(p * 2, last), r = min(q + 1, last);
    float4 sum = 0.0f;
    for (uint k = 0; k < 8; ++k)
        sum += src.read(uint3(k & 1 ? r.x : q.x, k & 2 ? r.y : q.y, k & 4 ? r.z : q.z), lod);
    dst.write(sum * 0.125f, p, lod + 1);
}
"""

_libraries: dict = {}
_lock = threading.Lock()


def _library(device: Device):
    key = (device.backend, device.index, device.checked, device.sandbox)
    with _lock:
        lib = _libraries.get(key)
    if lib is None:
        lib = device.compile(_SOURCE)
        with _lock:
            _libraries.setdefault(key, lib)
    return lib


def generate_mipmaps(self: Device, texture: Texture) -> None:
    """Fills mip levels 1 and up of ``texture`` from level 0 (a 2x2 box filter, 2x2x2 in 3-D;
    see metalcall/_mipmaps.py), like Metal's generateMipmapsForTexture:. Runs on this
    device, in order with the calls submitted before it; the texture's views wait for it.
    The texture needs a float, unorm or snorm format and "read_write" usage (the default)."""
    if not isinstance(texture, Texture):
        raise ArgumentError(f"generate_mipmaps takes a Texture, not {type(texture).__name__}")
    kind = texture.texture_type
    if kind.startswith("depth") or texture.format.endswith(("uint", "sint")):
        raise ArgumentError(f"generate_mipmaps: a {kind} of format {texture.format} cannot be filtered; it needs a "
                            "float, unorm or snorm color format, as Metal's generateMipmaps does")
    if texture.mip_levels == 1:
        return
    if kind not in ("texture2d", "texture2d_array", "texturecube", "texturecube_array", "texture3d"):
        raise ArgumentError(f"generate_mipmaps: a {kind} has no mip levels to fill")
    kernel = getattr(_library(self), f"mc_mip_{kind}")
    for lod in range(1, texture.mip_levels):
        w, h = max(1, texture.width >> lod), max(1, texture.height >> lod)
        slices = {"texture2d": (), "texture2d_array": (texture.array_length,), "texturecube": (6,),
                  "texturecube_array": (6 * texture.array_length,),
                  "texture3d": (max(1, texture.depth >> lod),)}[kind]
        kernel((w, h) + slices, np.array([lod - 1], np.uint32), textures=[texture, texture])


def install() -> None:
    Device.generate_mipmaps = generate_mipmaps  # type: ignore[attr-defined]
