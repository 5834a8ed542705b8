"""`python -m metalcall bench --html`: one self-contained page of a run, checked as a browser
renders it (tests/browser.py; skipped without Chromium, which CI installs)."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys

import pytest

from browser import png_rows_with_content, rendered_dom, screenshot

pytest.importorskip("matplotlib", reason="--html draws the plot with matplotlib: pip install 'metalcall[bench]'")


def test_bench_html_report(tmp_path):
    page, report = tmp_path / "report.html", tmp_path / "report.json"
    p = subprocess.run([sys.executable, "-m", "metalcall", "bench", "--quick", "--device", "cpu", "--max-size", "2^14",
                        "--compare", "--plain", "--html", str(page), "--json", str(report)],
                       capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    text = page.read_text(encoding="utf-8")
    # Self-contained: nothing is fetched from elsewhere; the plot is a PNG inside the page.
    assert not re.search(r'(src|href)="(?!data:)', text), "the page refers to files or addresses outside itself"
    (uri,) = re.findall(r'src="data:image/png;base64,([^"]+)"', text)
    width, height, busy = png_rows_with_content(base64.b64decode(uri))
    assert width > 500 and height > 200 and busy > 0.3

    # Every figure of the JSON report is on the page as the tables print it.
    data = json.loads(report.read_text())
    (entry,) = data["devices"]
    for point in entry["bandwidth"]["mul"]:
        assert f"<td>{point['gbps']:.2f}</td>" in text
    assert f"<td>{entry['compute']['gflops']:.2f}</td>" in text
    for peer in data["peers"]["results"]:
        assert f"<th>{peer['name']}</th>" in text

    dom = rendered_dom(page)
    assert re.search(r"<title>metalcall bench — [^<]+</title>", dom)
    assert len(re.findall(r"<table", dom)) == 7, "4 suite tables and 3 comparison tables"
    assert "checked against NumPy" in dom
    width, height, busy = screenshot(page, tmp_path / "report.png")
    assert busy > 0.3, f"the report's screenshot is mostly blank ({busy:.0%} of rows hold content)"


def test_bench_html_for_one_kernel(tmp_path):
    src = tmp_path / "k.metal"
    src.write_text("#include <metal_stdlib>\nusing namespace metal;\n"
                   "kernel void twice(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) "
                   "{ x[i] = 2.0f * x[i]; }\n")
    page = tmp_path / "k.html"
    p = subprocess.run([sys.executable, "-m", "metalcall", "bench", str(src), "--device", "cpu", "--arg", "f32[1e4]:ones",
                        "--repeat", "5", "--warmup", "1", "--plain", "--html", str(page)],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    text = page.read_text(encoding="utf-8")
    assert "twice on" in text and "<td>median</td>" in text and "data:image/png" not in text
