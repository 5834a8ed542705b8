"""A headless Chromium for the tests that check rendered pages (the documentation site,
`bench --html` reports): the DOM after scripts ran, and a screenshot that is not blank.

Tests skip, saying so, where no Chromium is installed (Debian: `apt-get install chromium`;
CI installs it)."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars"]


def chromium() -> str:
    """The browser's path, or a pytest skip naming what to install."""
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no headless Chromium on PATH (Debian: apt-get install chromium)")


def rendered_dom(page: Path) -> str:
    """The page's DOM after its scripts ran."""
    proc = subprocess.run([chromium(), *FLAGS, "--virtual-time-budget=3000", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "<html" in proc.stdout, f"Chromium could not render {page}:\n{proc.stderr[-2000:]}"
    return proc.stdout


def screenshot(page: Path, out: Path, size: tuple[int, int] = (1280, 1000)) -> tuple[int, int, float]:
    """A screenshot of the page into `out`: its width, height and the share of its rows that
    are not one flat colour (a blank page gives 0)."""
    proc = subprocess.run([chromium(), *FLAGS, f"--window-size={size[0]},{size[1]}", f"--screenshot={out}",
                           page.as_uri()], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and out.is_file(), f"Chromium made no screenshot of {page}:\n{proc.stderr[-2000:]}"
    return png_rows_with_content(out.read_bytes())


def png_rows_with_content(data: bytes) -> tuple[int, int, float]:
    """Width, height and the share of rows holding more than one colour, of an 8-bit RGB(A)
    PNG such as Chromium writes (no interlacing)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, f"unexpected PNG format {header}"
    channels = 3 if colour == 2 else 4
    stride = width * channels
    raw = zlib.decompress(idat)
    rows, previous, busy = [], bytearray(stride), 0
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):  # undo the row filter (PNG spec, section 9)
            a = line[x - channels] if x >= channels else 0
            b, c = previous[x], previous[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + a) & 255
            elif kind == 2:
                line[x] = (line[x] + b) & 255
            elif kind == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        busy += len({bytes(line[i:i + channels]) for i in range(0, stride, channels)}) > 1
        previous = line
    return width, height, busy / height
