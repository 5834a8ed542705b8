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
import signal
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
    p.add_argument("--devices", default="cpu,cuda",
                   help="comma-separated: cpu, cpu-checked, cuda, metal (macOS), metal-sim (the Metal simulator, anywhere); cpu-fibers, cpu-checked-fibers: the CPU's "
                        "barrier regions off; nvrtc: the CUDA translation compiled by NVRTC, not run (no GPU; "
                        "compile errors only)")
    p.add_argument("--category", help="only programs of this category (regions: only when asked for)")
    p.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2), help="worker processes")
    p.add_argument("--chunk", type=int, default=100, help="programs per worker process")
    p.add_argument("--batch", type=int, default=50, help="programs per library")
    p.add_argument("--seed", type=int, default=1000, help="first seed; each seed gives --per-seed programs")
    p.add_argument("--per-seed", type=int, default=1000)
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per chunk (a single program gets a quarter)")
    p.add_argument("--shrink", type=int, default=25, help="findings to shrink at most")
    p.add_argument("--shrink-timeout", type=float, default=600.0)
    p.add_argument("--time-limit", type=float, default=0.0,
                   help="seconds for the whole campaign: no chunk starts after it, and one still running "
                        "then is stopped (the batches it finished count; 0: no limit)")
    p.add_argument("--constants-every", type=int, default=1,
                   help="run only every k-th program with function constants (each costs a build of its own "
                        "per device)")


def run_group(cmd: list, timeout: float) -> tuple[int, str, bool]:
    """Runs cmd in a process group of its own: (exit status, stderr, timed out). Past the
    timeout the whole group is killed (its compilers and sandbox workers too, which would
    otherwise run on)."""
    with subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          start_new_session=True) as proc:
        timed_out, stderr = False, ""
        try:
            _, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if proc.poll() is None:
            proc.communicate()
        return proc.returncode, stderr or "", timed_out


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
        self.cut: list[list] = []  # chunks stopped or never started by --time-limit
        self.deadline = time.monotonic() + args.time_limit if args.time_limit > 0 else None

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
                "--batch", str(self.args.batch), "--out", str(report),
                "--constants-every", str(self.args.constants_every)]
        if self.args.category:
            cmd += ["--category", self.args.category]
        for d in self.devices:
            cmd += ["--device", d]
        return cmd

    def run_chunk(self, seed: int, start: int, count: int) -> None:
        """Runs a chunk; on a crash or timeout, its halves (down to single programs)."""
        report = self.out / "chunks" / f"s{seed}_{start}_{count}.json"
        timeout = self.args.timeout if count > 1 else self.args.timeout / 4
        left = self.deadline - time.monotonic() if self.deadline is not None else timeout
        if left <= 0:
            self.cut.append([seed, start, count])
            return
        by_limit = left < timeout  # the campaign's time limit ends first
        returncode, stderr, timed_out = run_group(self.command(seed, start, count, report), min(timeout, left))
        # stopped by the time limit, a chunk keeps the batches it finished (its report so far)
        ok = report.exists() and (returncode in (0, 1) or (timed_out and by_limit))
        why = f"no result within {timeout:.0f} s" if timed_out else f"exit status {returncode}: {stderr[-2000:]}"
        if timed_out and by_limit and not report.exists():
            self.cut.append([seed, start, count])
            self.log(f"seed {seed} [{start}, {start + count}) stopped by the time limit")
            return
        if ok:
            with open(report) as f:
                self.reports.append(json.load(f))
            stopped = not self.reports[-1].get("complete", True)
            if stopped:
                self.cut.append([seed, start, count])
            self.log(f"seed {seed} [{start}, {start + count}) " +
                     (f"stopped by the time limit after {self.reports[-1]['programs']} programs" if stopped else "done"))
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
                      f"--seed {f['seed']} --index {f['index']} --device {f['device']}"
                      f"{' --category ' + f['category'] if f['category'] == 'regions' else ''}\n" + "".join(f"// {line}\n" for line in f["detail"].splitlines()))
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
                    "--out", str(target)] + (["--category", "regions"] if f["category"] == "regions" else [])
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
        schedules = {d: Counter() for d in self.devices}
        programs = 0
        generator_errors = 0
        phases = {"wall": Counter(), "cpu": Counter()}
        skipped = 0
        for r in self.reports:
            programs += r["programs"]
            generator_errors += r["generator_errors"]
            skipped += len(r.get("skipped_with_constants", []))
            for kind in phases:
                phases[kind].update(r.get("seconds_by_phase", {}).get(kind, {}))
            for d, counts in r["results"].items():
                results[d].update(counts)
            for d, counts in r.get("schedules", {}).items():
                schedules[d].update(counts)
            for d, cats in r["by_category"].items():
                for c, counts in cats.items():
                    by_category[d][c].update(counts)
        return {
            "programs": programs,
            "devices": self.devices,
            "results": {d: dict(c) for d, c in results.items()},
            "mismatches": sum(c.get("mismatch", 0) for c in results.values()),
            "schedules": {d: dict(c) for d, c in schedules.items()},
            "failures": len(findings),
            "crashed_or_timed_out": self.crashes,
            "by_category": {d: {k: dict(v) for k, v in cats.items()} for d, cats in by_category.items()},
            "findings": [{k: f[k] for k in ("name", "seed", "index", "category", "device", "status", "detail")}
                         for f in findings],
            "shrunk": shrunk,
            "generator_errors": generator_errors,
            "skipped_with_constants": skipped,
            "cut_by_time_limit": self.cut,
            # summed over the workers: where the time goes, and per program
            "seconds_by_phase": {k: {p: round(v, 1) for p, v in c.items()} for k, c in phases.items()},
            "seconds_per_program": {k: {p: round(v / max(programs, 1), 4) for p, v in c.items()}
                                    for k, c in phases.items()},
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
    in_time = c.deadline is None or time.monotonic() < c.deadline
    shrunk = c.shrink(findings) if args.shrink and in_time else []
    summary = c.summary(findings, shrunk, time.monotonic() - started)
    (c.out / "summary.json").write_text(json.dumps(summary, indent=1))
    c.log(f"campaign done: {summary['programs']} programs, {summary['failures']} failing runs "
          f"({summary['mismatches']} mismatches), {len(c.crashes)} crashed or timed out; {c.out / 'summary.json'}")
    return 0
