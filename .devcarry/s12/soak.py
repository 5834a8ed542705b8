"""The exit soak's child (tests/reliability/test_exit_soak.py) run many times side by side, a line
per run as it ends (a time cap then still leaves every finished run on record):

    python .devcarry/s12/soak.py DEVICE RUNS WORKERS DEADLINE_S
"""
import ast
import concurrent.futures as cf
import os
import subprocess
import sys
import tempfile
import time

device, runs, workers, deadline = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
tree = ast.parse(open("tests/reliability/test_exit_soak.py").read())
child = next(n.value.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "CHILD")
tmp = tempfile.mkdtemp()
script = os.path.join(tmp, "child.py")
open(script, "w").write(child)
# faulthandler: a crash prints every Python thread's stack (which thread, in which call).
env = {**os.environ, "METALCALL_CACHE_DIR": os.path.join(tmp, "cache"), "PYTHONFAULTHANDLER": "1"}
# One compile first, so that the runs share a warm cache as the test's runs do.
subprocess.run([sys.executable, script, device, "0"], env=env, timeout=120)
start = time.monotonic()


def one(run):
    if time.monotonic() - start > deadline:
        return run, "skipped", 0.0, ""
    t = time.monotonic()
    try:
        p = subprocess.run([sys.executable, script, device, str(run)], capture_output=True, text=True, timeout=60, env=env)
        rc = p.returncode
        err = p.stderr[-6000:] if rc else ""
    except subprocess.TimeoutExpired:
        rc, err = "hung", ""
    return run, rc, time.monotonic() - t, err


counts = {}
with cf.ThreadPoolExecutor(workers) as pool:
    for run, rc, secs, err in pool.map(one, range(runs)):
        counts[rc] = counts.get(rc, 0) + 1
        if rc != "skipped":
            print(f"run {run} rc {rc} {secs:.2f} s", flush=True)
        if err:
            print(err, flush=True)
print("summary:", {str(k): v for k, v in counts.items()}, f"in {time.monotonic() - start:.0f} s", flush=True)
