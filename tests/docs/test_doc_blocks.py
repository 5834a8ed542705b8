"""Every Python block of README.md and docs/ runs (tests/docs/doc_blocks.py says how)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from doc_blocks import ROOT, pages, python_program

PAGES = [p for p in pages() if python_program(p)[1] or python_program(p)[2]]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_page_python_blocks_run(page, tmp_path):
    program, run, skipped = python_program(page)
    # `<!-- docs-test: requires MODULE -->` on a page: its blocks need an optional package.
    for module in re.findall(r"<!--\s*docs-test:\s*requires\s+([\w.]+)\s*-->", page.read_text(encoding="utf-8")):
        pytest.importorskip(module, reason=f"{page.name}'s examples need {module}, which is not installed")
    for b in skipped:
        assert b.skip_reason.strip(), f"{page.name}:{b.line}: a skipped block must say why"
    if not run:
        pytest.skip(f"every Python block of {page.name} needs what this machine lacks: "
                    + "; ".join(f"line {b.line}: {b.skip_reason}" for b in skipped))
    env = dict(os.environ, METALCALL_DEVICE="cpu", PYTHONPATH=str(ROOT / "examples"), MPLBACKEND="Agg")
    script = tmp_path / "doc_page.py"  # a file, not -c: worker processes that spawn re-import it
    script.write_text(program, encoding="utf-8")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (
        f"a Python block of {page.relative_to(ROOT)} failed (the traceback names the block's "
        f"page and line):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")


def test_skip_markers_precede_python_blocks():
    # A marker before anything else than a Python block would silently skip nothing.
    from doc_blocks import blocks
    for page in pages():
        text = page.read_text(encoding="utf-8").splitlines()
        marked = {i + 2 for i, line in enumerate(text) if "docs-test: skip" in line}
        python_lines = {b.line for b in blocks(page) if b.lang in ("python", "py")}
        assert marked <= python_lines, f"{page.name}: skip markers not before a ```python block: {sorted(marked - python_lines)}"
