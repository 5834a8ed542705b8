"""The metalcall.numpy example scripts (seeds 002, 003, 004) run and agree with NumPy."""

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _run(*args):
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, timeout=300)


def test_metallic_session():
    r = _run(EXAMPLES / "mnp_metallic_session.py", 5)
    assert r.returncode == 0, r.stderr
    assert "Array size: 10 ** 5" in r.stdout and "numpy:" in r.stdout
    assert r.stdout.count("[") >= 5  # the five printed arrays of the README session


def test_metalpy_ops():
    r = _run(EXAMPLES / "mnp_ops.py")
    assert r.returncode == 0, r.stderr
    assert "MISMATCH" not in r.stdout and "all MetalPy-style ops match NumPy" in r.stdout
