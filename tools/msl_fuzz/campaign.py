"""A long fuzzing campaign: chunks of programs run by worker processes, each under a timeout.

A chunk (seed, start, count) is one `python -m tools.msl_fuzz run` process. A chunk that
crashes or runs past its timeout is split in halves and run again, down to single
programs, so that one program that hangs or kills its process is found and the rest of
the campaign goes on. Findings are then shrunk (a limited number, each under a timeout).

The folder gets summary.json (programs run, results and findings by device and category),
findings/<device>/<program>.metal (source and the difference), chunks/*.json and log.txt.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import workarounds

ROOT = Path(__file__).resolve().parents[2]


def add_arguments(p) -> None:
    p.add_argument("--out", required=True, help="folder for summary.json and the findings")
    p.add_argument("--programs", type=int, default=20000, help="programs in all")
    p.add_argument("--devices", default="cpu,cuda", help="comma-separated: cpu, cpu-checked, cuda, metal")
    p.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2), help="worker processes")
    p.add_argument("--chunk", type=int, default=100, help="programs per worker process")
    p.add_argument("--batch", type=int, default=50, help="programs per library")
    p.add_argument("--seed", type=int, default=1000, help="first seed; each seed gives --per-seed programs")
    p.add_argument("--per-seed", type=int, default=1000)
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per chunk (a single program gets a quarter)")
    p.add_argument("--shrink", type=int, default=25, help="findings to shrink at most")
    p.add_argument("--shrink-timeout", type=float, default=600.0)


class Campaign:
    def __init__(self, args):
        self.args = args
        self.out = Path(args.out)
        for sub in ("chunks", "findings"):
            (self.out / sub).mkdir(parents=True, exist_ok=True)
        self.log_file = open(self.out / "log.txt", "a")
        self.devices = [d for d in args.devices.split(",") if d]
        self.reports: list[dict] = []
        self.crashes: list[dict] = []

    def log(self, message: str) -> None:
        line = f"{time.strftime('%H:%M:%S')} {message}"
        print(line, file=sys.stderr, flush=True)
        self.log_file.write(line + "\n")
        self.log_file.flush()

    def chunks(self):
        a = self.args
        for first in range(0, a.programs, a.chunk):
            count = min(a.chunk, a.programs - first)
            seed = a.seed + first // a.per_seed
            start = first % a.per_seed
            # a chunk never crosses a seed boundary
            count = min(count, a.per_seed - start)
            yield seed, start, count

    def command(self, seed: int, start: int, count: int, report: Path) -> list:
        cmd = [sys.executable, "-m", "tools.msl_fuzz"]
        if not workarounds.ACTIVE:
            cmd.append("--no-workarounds")
        cmd += ["run", "--seed", str(seed), "--start", str(start), "--count", str(count),
                "--batch", str(self.args.batch), "--out", str(report)]
        for d in self.devices:
            cmd += ["--device", d]
        return cmd

    def run_chunk(self, seed: int, start: int, count: int) -> None:
        """Runs a chunk; on a crash or timeout, its halves (down to single programs)."""
        report = self.out / "chunks" / f"s{seed}_{start}_{count}.json"
        timeout = self.args.timeout if count > 1 else self.args.timeout / 4
        try:
            done = subprocess.run(self.command(seed, start, count, report), cwd=ROOT, capture_output=True,
                                  text=True, timeout=timeout)
            ok = report.exists() and done.returncode in (0, 1)
            why = f"exit status {done.returncode}: {done.stderr[-2000:]}"
        except subprocess.TimeoutExpired:
            ok, why = False, f"no result within {timeout:.0f} s"
        if ok:
            with open(report) as f:
                self.reports.append(json.load(f))
            self.log(f"seed {seed} [{start}, {start + count}) done")
            return
        if count == 1:
            self.crashes.append({"seed": seed, "index": start, "why": why})
            self.log(f"seed {seed} index {start}: {why[:300]}")
            return
        self.log(f"seed {seed} [{start}, {start + count}) failed ({why[:200]}); splitting")
        half = count // 2
        self.run_chunk(seed, start, half)
        self.run_chunk(seed, start + half, count - half)

    def write_findings(self) -> list:
        findings = []
        for r in self.reports:
            findings += r["findings"]
        for f in findings:
            folder = self.out / "findings" / f["device"]
            folder.mkdir(parents=True, exist_ok=True)
            header = (f"// seed {f['seed']} index {f['index']} ({f['category']}) on {f['device']}: {f['status']}\n"
                      f"// replay: python -m tools.msl_fuzz{'' if workarounds.ACTIVE else ' --no-workarounds'} shrink "
                      f"--seed {f['seed']} --index {f['index']} --device {f['device']}\n" + "".join(f"// {line}\n" for line in f["detail"].splitlines()))
            (folder / f"{f['name']}.metal").write_text(header + f["source"])
        return findings

    def shrink(self, findings: list) -> list:
        shrunk = []
        seen = set()
        for f in findings:
            if len(shrunk) >= self.args.shrink:
                break
            key = (f["device"], f["category"], f["status"])
            if key in seen:
                continue  # one per kind first; the rest stay as found
            seen.add(key)
            target = self.out / "findings" / f["device"] / f"{f['name']}.shrunk.metal"
            cmd = [sys.executable, "-m", "tools.msl_fuzz"] + ([] if workarounds.ACTIVE else ["--no-workarounds"])
            cmd += ["shrink", "--seed", str(f["seed"]), "--index", str(f["index"]), "--device", f["device"],
                    "--out", str(target)]
            try:
                subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=self.args.shrink_timeout)
            except subprocess.TimeoutExpired:
                self.log(f"shrinking {f['name']} on {f['device']} ran out of time")
            if target.exists():
                shrunk.append(str(target.relative_to(self.out)))
        return shrunk

    def summary(self, findings: list, shrunk: list, seconds: float) -> dict:
        results = {d: Counter() for d in self.devices}
        by_category: dict = {d: defaultdict(Counter) for d in self.devices}
        programs = 0
        generator_errors = 0
        for r in self.reports:
            programs += r["programs"]
            generator_errors += r["generator_errors"]
            for d, counts in r["results"].items():
                results[d].update(counts)
            for d, cats in r["by_category"].items():
                for c, counts in cats.items():
                    by_category[d][c].update(counts)
        return {
            "programs": programs,
            "devices": self.devices,
            "results": {d: dict(c) for d, c in results.items()},
            "mismatches": sum(c.get("mismatch", 0) for c in results.values()),
            "failures": len(findings),
            "crashed_or_timed_out": self.crashes,
            "by_category": {d: {k: dict(v) for k, v in cats.items()} for d, cats in by_category.items()},
            "findings": [{k: f[k] for k in ("name", "seed", "index", "category", "device", "status", "detail")}
                         for f in findings],
            "shrunk": shrunk,
            "generator_errors": generator_errors,
            "workarounds": sorted(workarounds.ACTIVE),
            "seconds": round(seconds, 1),
            "settings": {k: v for k, v in vars(self.args).items() if k != "func"},
        }


def command_campaign(args) -> int:
    c = Campaign(args)
    started = time.monotonic()
    c.log(f"campaign: {args.programs} programs on {', '.join(c.devices)}, {args.jobs} workers")
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for future in [pool.submit(c.run_chunk, *chunk) for chunk in c.chunks()]:
            future.result()
    findings = c.write_findings()
    shrunk = c.shrink(findings) if args.shrink else []
    summary = c.summary(findings, shrunk, time.monotonic() - started)
    (c.out / "summary.json").write_text(json.dumps(summary, indent=1))
    c.log(f"campaign done: {summary['programs']} programs, {summary['failures']} failing runs "
          f"({summary['mismatches']} mismatches), {len(c.crashes)} crashed or timed out; {c.out / 'summary.json'}")
    return 0
