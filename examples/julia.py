"""A Julia set image, as in seed 000's thumbnail: one thread per pixel, RGBA (uchar4) output.

    python examples/julia.py [--size 512] [--output julia.png] [--device cpu]

Saves a PNG with matplotlib when it is installed, else a PPM (Netpbm colour)
image. Checks which pixels are inside the set against the same iteration in NumPy.
"""

import argparse
import time

import metalcall as mc
import numpy as np

MAX_ITERATIONS = 100

SOURCE = """
#include <metal_stdlib>
using namespace metal;
kernel void julia(device uchar4 *image [[buffer(0)]],
                  constant float2 &c [[buffer(1)]],
                  constant float &zoom [[buffer(2)]],
                  uint2 pos [[thread_position_in_grid]],
                  uint2 size [[threads_per_grid]]) {
    const float R = 100.0f;
    float2 z = (float2(pos) - 0.5f * float2(size)) / float(size.y) * zoom;
    float i = 0.0f, m = 0.0f;
    for (int iteration = 0; iteration < MAX_ITERATIONS; ++iteration) {
        z = float2(z.x * z.x - z.y * z.y + c.x, 2.0f * z.x * z.y + c.y);
        m = dot(z, z);
        if (m > R * R) break;
        i += 1.0f;
    }
    uchar4 colour = uchar4(0, 0, 0, 255);  // inside the set: black
    if (i < MAX_ITERATIONS) {
        // The post's smooth colouring: a fractional iteration count, then three sine waves.
        i = max(i - log2(log(sqrt(m)) / log(R)) + 1.0f, 1.0f);
        float3 rgb = 0.5f + 0.4f * sin(8.0f * log2(i) * float3(0.31f, 0.53f, 0.71f));
        colour = uchar4(uchar3(rgb * 255.0f), 255);
    }
    image[pos.y * size.x + pos.x] = colour;
}
"""


def inside_numpy(width: int, height: int, c: np.ndarray, zoom: float) -> np.ndarray:
    """True where the iteration never escapes, computed in float32 NumPy like the kernel."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    zx = (x - np.float32(0.5 * width)) / np.float32(height) * np.float32(zoom)
    zy = (y - np.float32(0.5 * height)) / np.float32(height) * np.float32(zoom)
    inside = np.ones((height, width), bool)
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(MAX_ITERATIONS):
            zx, zy = zx * zx - zy * zy + c[0], np.float32(2) * zx * zy + c[1]
            inside &= zx * zx + zy * zy <= np.float32(100 * 100)
    return inside


def save(image: np.ndarray, path: str) -> str:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        path = path.rsplit(".", 1)[0] + ".ppm"
        height, width = image.shape[:2]
        with open(path, "wb") as f:
            f.write(b"P6 %d %d 255\n" % (width, height) + image[:, :, :3].tobytes())
        return path
    plt.imsave(path, image)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512, help="image height in pixels; width is 1.5x (default 512)")
    parser.add_argument("--output", default="julia.png", help="image file (default julia.png)")
    parser.add_argument("--device", help="device name or index (default: mc.Device())")
    args = parser.parse_args()
    height, width = args.size, args.size * 3 // 2
    c, zoom = np.array([-0.8, 0.156], np.float32), 3.0

    dev = mc.Device() if args.device is None else mc.Device(int(args.device) if args.device.isdigit() else args.device)
    julia = dev.compile(SOURCE, defines={"MAX_ITERATIONS": MAX_ITERATIONS}).julia
    image = dev.empty((height, width, 4), np.uint8)
    julia((width, height), image, c, np.float32(zoom)).wait()  # warm-up
    start = time.perf_counter()
    julia((width, height), image, c, np.float32(zoom)).wait()
    seconds = time.perf_counter() - start

    pixels = np.asarray(image)
    inside = (pixels[:, :, :3] == 0).all(axis=2)
    agree = (inside == inside_numpy(width, height, c, zoom)).mean()
    # Pixels on the set's edge may escape one way or the other: rounding differs (fused multiply-adds).
    if agree < 0.995:
        raise SystemExit(f"wrong image on {dev.name}: only {agree:.1%} of pixels agree with NumPy on being inside")
    path = save(pixels, args.output)
    print(f"{width}x{height} Julia set on {dev.name} in {seconds * 1e3:.1f} ms "
          f"({width * height / seconds / 1e6:.1f} Mpixel/s); {agree:.2%} of pixels agree with NumPy; saved {path}")


if __name__ == "__main__":
    main()
