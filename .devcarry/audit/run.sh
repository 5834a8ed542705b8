#!/bin/bash
# P2.4 item 9 on CUDA: tests/reliability/test_exit_soak.py's child (sys.exit(0) with daemon threads
# calling kernels every way) run as many times as fit in ~220 s, each outcome logged as it ends.
# Assumes the package is installed; writes $OUT/audit/exit_soak_cuda.log (one line a run) and a summary.
set -u
mkdir -p "$OUT/audit"
python3 - "$OUT/audit" <<'PY'
import importlib.util, os, subprocess, sys, tempfile, time
out = sys.argv[1]
spec = importlib.util.spec_from_file_location("soak", "tests/reliability/test_exit_soak.py")
soak = importlib.util.module_from_spec(spec); spec.loader.exec_module(soak)
work = tempfile.mkdtemp(prefix="soak-")
script = os.path.join(work, "child.py"); open(script, "w").write(soak.CHILD)
env = {**os.environ, "METALCALL_CACHE_DIR": os.path.join(work, "cache")}
deadline, runs, bad = time.time() + int(os.environ.get("SOAK_SECONDS", "220")), 0, 0
with open(os.path.join(out, "exit_soak_cuda.log"), "w") as log:
    while time.time() < deadline and runs < 1000:
        try:
            p = subprocess.run([sys.executable, script, "cuda", str(runs)], capture_output=True, text=True,
                               timeout=60, env=env)
            outcome = "ok" if p.returncode == 0 else f"rc {p.returncode}: {p.stderr[-400:]!r}"
        except subprocess.TimeoutExpired:
            outcome = "hung"
        bad += outcome != "ok"
        log.write(f"{runs} {outcome}\n"); log.flush(); runs += 1
print(f"exit soak on cuda: {runs} runs, {bad} failed")
open(os.path.join(out, "summary.txt"), "w").write(f"exit soak on cuda: {runs} runs, {bad} failed\n")
PY
