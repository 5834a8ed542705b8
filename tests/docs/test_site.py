"""The documentation site builds with warnings as errors (`mkdocs build --strict`), and its
home page and API page render in a headless browser: a title, the navigation, code blocks."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from browser import rendered_dom, screenshot
from doc_blocks import ROOT

GUIDES = ("Quick start", "Writing kernels", "Calling kernels", "Backends", "Benchmarking", "C++ embedding",
          "Many processes and GPUs", "Metal on a Mac", "Security")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("mkdocs", reason="the docs extra is not installed: pip install '.[docs]'")
    pytest.importorskip("material", reason="mkdocs-material is not installed: pip install '.[docs]'")
    pytest.importorskip("mkdocstrings_handlers.python", reason="mkdocstrings-python is not installed: pip install '.[docs]'")
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(out)], capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return out


def test_every_page_is_in_the_navigation(site):
    # A page left out of mkdocs.yml's nav is built but unreachable: list it there.
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    missing = sorted(p for p in pages if f": {p}" not in nav)
    assert not missing, f"pages not in mkdocs.yml's nav: {missing}"


def test_home_page_renders(site, tmp_path):
    dom = rendered_dom(site / "index.html")
    assert re.search(r"<title>\s*metalcall\s*</title>", dom)
    links = re.findall(r'class="md-nav__link[^"]*"[^>]*>\s*(?:<span[^>]*>)?\s*([^<]+?)\s*<', dom)
    assert set(GUIDES) <= {link.strip() for link in links}, f"navigation lacks guides; it has {links}"
    code = " ".join(re.sub(r"<[^>]+>", "", block) for block in re.findall(r"<pre.*?</pre>", dom, re.S))
    assert "dev = mc.Device()" in code, "the home page's code block did not render"
    width, height, busy = screenshot(site / "index.html", tmp_path / "home.png")
    assert (width, height) == (1280, 1000)
    assert busy > 0.3, f"the home page's screenshot is mostly blank ({busy:.0%} of rows hold content)"


def test_api_page_renders(site, tmp_path):
    page = site / "api" / "python" / "index.html"
    dom = rendered_dom(page)
    assert re.search(r"<title>[^<]*metalcall[^<]*</title>", dom)
    # The reference is generated from the stubs' docstrings: classes, methods and their text.
    for name in ("Device", "Kernel", "Buffer", "Completion", "CompileError"):
        assert re.search(rf'id="metalcall\.{name}"', dom), f"no entry for metalcall.{name}"
    assert re.search(r'id="metalcall\.Device\.compile"', dom), "Device.compile is not documented"
    assert "md-nav" in dom and "<code" in dom
    width, height, busy = screenshot(page, tmp_path / "api.png")
    assert busy > 0.3, f"the API page's screenshot is mostly blank ({busy:.0%} of rows hold content)"


def test_numpy_reference_lists_the_namespace(site):
    # Generated from the live module (docs_hooks/numpy_api.py): the names made at import time too.
    import metalcall.numpy as mnp

    text = (site / "api" / "numpy" / "index.html").read_text(encoding="utf-8")
    missing = [name for name in mnp.__all__ if f'id="{name.lower()}"' not in text and f'id="{name}"' not in text]
    assert not missing, f"names of metalcall.numpy.__all__ without an entry: {missing[:20]}"
    assert "Elementwise sin" in text  # a generated function's docstring
