"""What bench_peers_cpu.py and bench_peers_cuda.py share: interleaved timing of metalcall and
its peers, one row per line of issue P2.2's table, printed as a Markdown table.

A row holds candidates: (label, run) pairs, metalcall's first. `run(number)` does the
operation `number` times, completed (waited for). Every candidate is checked before it is
timed (the row's `check`), then the rounds take turns between the candidates, so that a
disturbance of the (shared, loaded) machine hits them alike. Each round times a batch long
enough to read the clock well; the table gives per-operation medians over the rounds, the
spread (10th-90th percentile of the rounds), and metalcall's median over each peer's.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import metalcall as mc

Run = Callable[[int], object]


@dataclass
class Row:
    what: str
    candidates: list[tuple[str, Run]] = field(default_factory=list)
    note: str = ""  # a peer that is missing, or why a figure is not comparable
    results: dict[str, tuple[float, float, float]] = field(default_factory=dict)  # label -> (median, p10, p90)
    fixed: dict[str, float] = field(default_factory=dict)  # measured once elsewhere (cold compiles), seconds
    per: int = 1  # operations one run of a candidate does (results are per operation)
    error: str = ""  # why the row could not be set up or measured (the table says so)

    def as_json(self) -> dict:
        """What a row measured, for a partial-results file (candidates' functions left out)."""
        return {"what": self.what, "note": self.note, "results": self.results, "fixed": self.fixed,
                "per": self.per, "error": self.error}

    @classmethod
    def from_json(cls, d: dict) -> "Row":
        return cls(d["what"], note=d.get("note", ""), results={k: tuple(v) for k, v in d.get("results", {}).items()},
                   fixed=d.get("fixed", {}), per=d.get("per", 1), error=d.get("error", ""))


def _batch_size(run: Run, min_seconds: float) -> int:
    run(1)  # warm-up (first-call costs are not what a row measures)
    number = 1
    while True:
        start = time.perf_counter()
        run(number)
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds or number >= 1 << 20:
            return number
        number *= max(2, min(10, int(min_seconds / max(elapsed, 1e-9)) + 1))


def _percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def measure(row: Row, rounds: int, min_seconds: float) -> None:
    numbers = {label: _batch_size(run, min_seconds) for label, run in row.candidates}
    samples: dict[str, list[float]] = {label: [] for label, _ in row.candidates}
    for _ in range(rounds):
        for label, run in row.candidates:
            start = time.perf_counter()
            run(numbers[label])
            samples[label].append((time.perf_counter() - start) / (numbers[label] * row.per))
    for label, s in samples.items():
        row.results[label] = (statistics.median(s), _percentile(s, 0.1), _percentile(s, 0.9))


def fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.2f} µs" if seconds < 1e-5 else f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def render(rows: list[Row]) -> str:
    """The rows as Markdown: metalcall's candidates, the peers', and metalcall / peer medians."""
    lines = ["| what | metalcall (median, p10–p90) | peers (median, p10–p90) | metalcall / peer |",
             "|---|---|---|---|"]
    for row in rows:
        if row.error:
            lines.append(f"| {row.what} | failed: {row.error} | — | — |")
            continue
        ours = [(k, v) for k, v in row.results.items() if k.startswith("metalcall")]
        peers = [(k, v) for k, v in row.results.items() if not k.startswith("metalcall")]
        ours += [(k, (v, v, v)) for k, v in row.fixed.items() if k.startswith("metalcall")]
        peers += [(k, (v, v, v)) for k, v in row.fixed.items() if not k.startswith("metalcall")]

        def cell(items):
            return "<br>".join(f"{k}: {fmt(m)} ({fmt(lo)}–{fmt(hi)})" if lo != hi else f"{k}: {fmt(m)}"
                               for k, (m, lo, hi) in items) or "—"

        ratios = []
        if ours and peers:
            base_label, (base, _, _) = ours[0]
            ratios = [f"{base / m:.2f}× {k}" for k, (m, _, _) in peers if m > 0]
        ratio = "<br>".join(ratios) or "—"
        note = f"<br>*{row.note}*" if row.note else ""
        lines.append(f"| {row.what}{note} | {cell(ours)} | {cell(peers)} | {ratio} |")
    return "\n".join(lines)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=os.path.dirname(os.path.abspath(__file__)), check=False).stdout.strip()
    except OSError:
        commit = "?"
    return (f"{cpu}, {os.cpu_count()} CPUs; Python {platform.python_version()}; commit {commit or '?'}; "
            f"load average {load:.1f} at the start; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")


def new_process_seconds(code: str, env: dict | None = None) -> float:
    """Runs `code` in a new interpreter, which prints the seconds it measured; returns them."""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False,
                            env=dict(os.environ, **(env or {})))
    if result.returncode != 0:
        raise RuntimeError("a probe process failed:\n" + result.stderr[-2000:])
    return float(result.stdout.strip().splitlines()[-1])


def check(ok: bool, what: str) -> None:
    if not ok:
        raise AssertionError(f"wrong result: {what}")


def uninitialized_supported(dev: mc.Device) -> bool:
    """dev.empty(..., uninitialized=True) exists (not in metalcall before P2.2: runs of older builds skip it)."""
    try:
        dev.empty(1, np.float32, uninitialized=True)
        return True
    except TypeError:
        return False


def repeat(fn):
    def run(number: int) -> None:
        for _ in range(number):
            fn()
    return run
