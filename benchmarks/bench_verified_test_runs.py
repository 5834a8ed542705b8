"""What the translation verifier adds to test runs: `pytest -n 2 FILES` with METALCALL_VERIFY=1
and =0 alternating (1,0 / 0,1 / ...), each in a fresh cache folder (every compile cold). Prints
each run's wall time and CPU time (user + system of pytest and every process under it: its
workers, the host compilers), which other load on the machine hardly moves.

Usage: python benchmarks/bench_verified_test_runs.py ROUNDS FILE...
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time


def main() -> None:
    rounds, files = int(sys.argv[1]), sys.argv[2:]
    for r in range(rounds):
        for verify in ("1", "0") if r % 2 == 0 else ("0", "1"):
            with tempfile.TemporaryDirectory() as cache:
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.perf_counter()
                run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider", *files],
                                     env={**os.environ, "METALCALL_VERIFY": verify, "METALCALL_CACHE_DIR": cache},
                                     capture_output=True, text=True)
                wall = time.perf_counter() - start
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
                summary = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr[-300:]
                print(f"round {r} METALCALL_VERIFY={verify}: wall {wall:.1f} s, cpu {cpu:.1f} s, "
                      f"load {os.getloadavg()[0]:.1f}; {summary}", flush=True)


if __name__ == "__main__":
    main()
