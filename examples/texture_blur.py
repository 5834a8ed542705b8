"""Textures and samplers: a 3x3 box blur, a bilinear 2x upscale and a mip chain of an RGBA8 image.

    python examples/texture_blur.py [--size 512] [--device cpu]

Reads and writes `texture2d`s (rgba8unorm: the kernel sees floats in [0, 1]), samples
with a `constexpr sampler` declared in the source and with one passed as an argument,
checks the blur against NumPy, then makes the image's mip levels (dev.generate_mipmaps)
and samples between two of them with a trilinear sampler (level()).
"""

import argparse

import metalcall as mc
import numpy as np

SOURCE = """
#include <metal_stdlib>
using namespace metal;

kernel void box_blur(texture2d<float, access::read> src [[texture(0)]],
                     texture2d<float, access::write> dst [[texture(1)]],
                     uint2 gid [[thread_position_in_grid]]) {
    if (gid.x >= dst.get_width() || gid.y >= dst.get_height()) return;
    const int w = int(src.get_width()), h = int(src.get_height());
    float4 sum = 0.0f;
    for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx)
            sum += src.read(uint2(clamp(int(gid.x) + dx, 0, w - 1), clamp(int(gid.y) + dy, 0, h - 1)));
    dst.write(sum / 9.0f, gid);
}

constexpr sampler bilinear(coord::normalized, address::clamp_to_edge, filter::linear);

kernel void upscale(texture2d<float> src [[texture(0)]], texture2d<float, access::write> dst [[texture(1)]],
                    uint2 gid [[thread_position_in_grid]]) {
    const float2 uv = (float2(gid) + 0.5f) / float2(dst.get_width(), dst.get_height());
    dst.write(src.sample(bilinear, uv), gid);
}

constexpr sampler trilinear(filter::linear, mip_filter::linear);

kernel void minify(texture2d<float> src [[texture(0)]], texture2d<float, access::write> dst [[texture(1)]],
                   constant float& lod [[buffer(0)]], uint2 gid [[thread_position_in_grid]]) {
    const float2 uv = (float2(gid) + 0.5f) / float2(dst.get_width(), dst.get_height());
    dst.write(src.sample(trilinear, uv, level(lod)), gid);  // blends the two levels around lod
}

kernel void tile(texture2d<float> src [[texture(0)]], sampler s [[sampler(0)]],
                 texture2d<float, access::write> dst [[texture(1)]], uint2 gid [[thread_position_in_grid]]) {
    const float2 uv = 3.0f * (float2(gid) + 0.5f) / float2(dst.get_width(), dst.get_height());
    dst.write(src.sample(s, uv), gid);  // the sampler's address mode repeats or mirrors the image
}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--device", default=None)
    args = parser.parse_args()
    dev = mc.Device(args.device) if args.device else mc.Device()
    lib = dev.compile(SOURCE)

    rng = np.random.default_rng(0)
    n = args.size
    image = rng.integers(0, 256, (n, n, 4), dtype=np.uint8)
    src = dev.texture_from(image)  # rgba8unorm
    blurred = dev.texture((n, n), "rgba8unorm")
    lib.box_blur((n, n), textures=[src, blurred])

    f = np.pad(image.astype(np.float64) / 255, ((1, 1), (1, 1), (0, 0)), mode="edge")
    want = sum(f[1 + dy:1 + dy + n, 1 + dx:1 + dx + n] for dy in (-1, 0, 1) for dx in (-1, 0, 1)) / 9
    err = np.abs(np.asarray(blurred).astype(np.int64) - np.rint(want * 255).astype(np.int64)).max()
    print(f"{dev.name}: box blur of {n}x{n} rgba8unorm, max difference from NumPy {err} (of 255)")

    big = dev.texture((2 * n, 2 * n), "rgba8unorm")
    lib.upscale((2 * n, 2 * n), textures=[blurred, big])
    tiled = dev.texture((n, n), "rgba8unorm")
    lib.tile((n, n), textures=[src, tiled], samplers=[dev.sampler(filter="linear", address="mirrored_repeat")])
    print(f"upscaled to {big.width}x{big.height} (row pitch {big.row_pitch} bytes); tiled 3x3 with mirroring")

    mipped = dev.texture_from(image, mip_levels="full")
    dev.generate_mipmaps(mipped)  # each level: 2x2 means of the one above
    level1 = np.asarray(mipped.level(1)).astype(np.float64) / 255
    level2 = np.asarray(mipped.level(2)).astype(np.float64) / 255
    quarter = dev.texture((n // 4, n // 4), "rgba8unorm")
    lib.minify(quarter.shape[1::-1], 1.5, textures=[mipped, quarter])
    # At LOD 1.5 on a grid the size of level 2: half level 2's texel, half level 1's 2x2 bilinear blend.
    want = 0.5 * level2 + 0.5 * level1.reshape(n // 4, 2, n // 4, 2, 4).mean(axis=(1, 3))
    err = np.abs(np.asarray(quarter).astype(np.int64) - np.rint(want * 255).astype(np.int64)).max()
    print(f"{mipped.mip_levels} mip levels; trilinear sample at LOD 1.5, max difference from NumPy {err} (of 255)")


if __name__ == "__main__":
    main()
