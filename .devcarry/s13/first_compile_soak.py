"""Exit during the process's first compile on a daemon thread, many times side by side, a line
per failing run and a summary:

    python .devcarry/s13/first_compile_soak.py DEVICE RUNS WORKERS DEADLINE_S [old]

`old` fills CPython's Py_AtExit table (32 no-op entries) before metalcall is imported, so that
its Py_AtExit wait cannot be registered and only the std::atexit wait of on_exit is left (the
behaviour before the fix): the same build then shows both."""
import concurrent.futures as cf
import os
import subprocess
import sys
import tempfile
import time

device, runs, workers, deadline = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
old = len(sys.argv) > 5 and sys.argv[5] == "old"
CHILD = r'''
import os, random, sys, threading, time
if os.environ.get("FILL_PY_ATEXIT"):
    import ctypes
    libc = ctypes.CDLL(None)
    noop = ctypes.cast(libc.getpid, ctypes.c_void_p)
    for _ in range(32):
        if ctypes.pythonapi.Py_AtExit(noop) != 0:
            break
import metalcall as mc
seed = int(sys.argv[2])
random.seed(seed)
dev = mc.Device(sys.argv[1])
SRC = ("kernel void add_%d(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]])"
       " { a[i] += %d.0f; }" % (seed, seed))
threading.Thread(target=lambda: dev.compile(SRC), daemon=True).start()
time.sleep(random.uniform(0.0, 0.3))
sys.exit(0)
'''
tmp = tempfile.mkdtemp()
script = os.path.join(tmp, "child.py")
open(script, "w").write(CHILD)
env = {**os.environ, "METALCALL_CACHE_DIR": os.path.join(tmp, "cache"), "PYTHONFAULTHANDLER": "1"}
if old:
    env["FILL_PY_ATEXIT"] = "1"
start = time.monotonic()


def one(run):
    if time.monotonic() - start > deadline:
        return run, "skipped", ""
    try:
        p = subprocess.run([sys.executable, script, device, str(run)], capture_output=True, text=True, timeout=60, env=env)
        return run, p.returncode, (p.stderr[-3000:] if p.returncode else "")
    except subprocess.TimeoutExpired:
        return run, "hung", ""


counts = {}
with cf.ThreadPoolExecutor(workers) as pool:
    for run, rc, err in pool.map(one, range(runs)):
        counts[rc] = counts.get(rc, 0) + 1
        if rc not in (0, "skipped"):
            print(f"run {run} rc {rc}\n{err}", flush=True)
print("summary", "old" if old else "new", {str(k): v for k, v in counts.items()},
      f"in {time.monotonic() - start:.0f} s", flush=True)
