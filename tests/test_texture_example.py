"""examples/texture_blur.py runs and agrees with its NumPy references (blur, mip chain, trilinear LOD)."""

import re
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "texture_blur.py"


def test_texture_blur_example():
    r = subprocess.run([sys.executable, str(EXAMPLE), "--size", "64", "--device", "cpu"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    diffs = [int(d) for d in re.findall(r"max difference from NumPy (\d+) \(of 255\)", r.stdout)]
    assert len(diffs) == 2 and max(diffs) <= 1, r.stdout  # rounding of the last bit at most
    assert "7 mip levels" in r.stdout
