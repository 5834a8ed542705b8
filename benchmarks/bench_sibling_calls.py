"""What -fno-optimize-sibling-calls costs kernels on the CPU (docs/design.md, "Stopping kernels"):
bench_stop_checks.py's kernels (c = a * b as written and as a loop, the heavy FMA recurrence
unrolled and as a loop) built with the flag, as the CPU backend builds every kernel, and
without it, in alternating rounds, each variant in its own process and disk cache.

    python benchmarks/bench_sibling_calls.py [--rounds 5] [--repeats 9]

"Without" compiles through a wrapper that drops the flag (METALCALL_CXX, the host compiler
metalcall would run otherwise: $METALCALL_CXX, else g++); "with" through one that keeps it, so
both pay the same. Per metric: the median over the rounds of each round's figure (CPU time of
the calls, bench_stop_checks.py --cpu-time), and what the flag costs (positive: slower with it;
rates compare without/with, times with/without).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

WRAPPER = """#!/bin/sh
for a do shift; [ "$a" = -fno-optimize-sibling-calls ] && [ "$DROP" = 1 ] || set -- "$@" "$a"; done
exec {cxx} "$@"
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    bench = pathlib.Path(__file__).with_name("bench_stop_checks.py")
    results = {"with": [], "without": []}
    with tempfile.TemporaryDirectory() as tmp:
        wrapper = pathlib.Path(tmp, "cxx")
        wrapper.write_text(WRAPPER.format(cxx=os.environ.get("METALCALL_CXX", "g++")))
        wrapper.chmod(0o755)
        for r in range(args.rounds):
            for variant in ("with", "without") if r % 2 == 0 else ("without", "with"):  # (each first in turn)
                out = pathlib.Path(tmp, f"{variant}-{r}.json")
                env = dict(os.environ, METALCALL_CXX=str(wrapper), DROP="1" if variant == "without" else "0",
                           METALCALL_CACHE_DIR=str(pathlib.Path(tmp, f"cache-{variant}")))
                subprocess.run([sys.executable, str(bench), "--cpu-time", "--repeats", str(args.repeats),
                                "--json", str(out)], env=env, check=True, stdout=subprocess.DEVNULL)
                results[variant].append(json.loads(out.read_text()))
    print(f"# -fno-optimize-sibling-calls on {results['with'][0]['device']}: {args.rounds} alternating rounds, medians\n")
    print("| metric | with the flag | without | the flag's cost |\n|---|---|---|---|")
    for key, value in results["with"][0].items():
        if not isinstance(value, float) or "%" in key:
            continue
        w = statistics.median(run[key] for run in results["with"])
        wo = statistics.median(run[key] for run in results["without"])
        cost = w / wo - 1 if key.endswith(" us") else wo / w - 1
        print(f"| {key} | {w:.4g} | {wo:.4g} | {cost * 100:+.1f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
