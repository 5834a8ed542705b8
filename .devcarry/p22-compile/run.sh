#!/bin/bash
# p22-compile (issue P2.2 item 5): cold CUDA compiles (a new process and an empty cache each,
# several kernels, with the per-kernel prelude and with the whole one; where the time goes)
# beside CuPy's cold RawKernel, in-memory compile hits beside CuPy's, and the tests of the
# prelude parts and of the coarsened entry points (built on the first large launch). <= 4 min.
set -u
D="$OUT/p22-compile"
mkdir -p "$D"
cd "$(dirname "$0")/../.."
{ date -u; git log -1 --format='%h %s' 2>/dev/null; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader;
  python3 -c "import cupy; print('cupy', cupy.__version__)"; uptime; } > "$D/machine.txt" 2>&1
part() {  # part NAME SECONDS COMMAND...: runs COMMAND under a cap, log in $D/NAME.log
  local name=$1 cap=$2; shift 2
  local t0=$(date +%s)
  timeout "$cap" "$@" > "$D/$name.log" 2>&1
  echo "rc $? in $(( $(date +%s) - t0 )) s (cap $cap)" >> "$D/$name.log"
}
part cold 100 python3 benchmarks/bench_compile.py --device cuda --only cold --repeats 5 --json "$D/rows.jsonl"
part hit 30 python3 benchmarks/bench_compile.py --device cuda --only hit --json "$D/rows.jsonl"
tests=$(ls tests/test_compile_memo.py tests/test_cuda_prelude_parts.py tests/test_cuda_lazy_coarsened.py \
  tests/test_cuda_coarsened.py 2>/dev/null)
part tests 100 python3 -m pytest -q -p no:benchmark -rfE $tests
tail -n 20 "$D"/*.log
