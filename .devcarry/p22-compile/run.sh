#!/bin/bash
# p22-compile (issue P2.2 item 5): where a cold CUDA compile's time goes, phase by phase, beside
# CuPy's cold RawKernel (benchmarks/bench_compile_phases.py: new processes, empty caches), the
# cold-compile rows of benchmarks/bench_compile.py, hits, and the tests of the cold path. <= 3 min.
set -u
D="$OUT/p22-compile"
mkdir -p "$D"
cd "$(dirname "$0")/../.."
{ date -u; git log -1 --format='%h %s' 2>/dev/null; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader;
  python3 -c "import cupy; print('cupy', cupy.__version__)"; uptime; nproc;
  for c in clang++ g++ c++ $(compgen -c clang++- 2>/dev/null | sort -u); do command -v "$c"; done; } > "$D/machine.txt" 2>&1
part() {  # part NAME SECONDS COMMAND...: runs COMMAND under a cap, log in $D/NAME.log
  local name=$1 cap=$2; shift 2
  local t0=$(date +%s)
  timeout "$cap" "$@" > "$D/$name.log" 2>&1
  echo "rc $? in $(( $(date +%s) - t0 )) s (cap $cap)" >> "$D/$name.log"
}
part phases 60 python3 benchmarks/bench_compile_phases.py --repeats 5 --json "$D/rows.jsonl"
part cold 60 python3 benchmarks/bench_compile.py --device cuda --only cold --repeats 3 --json "$D/rows.jsonl"
part hit 15 python3 benchmarks/bench_compile.py --device cuda --only hit --json "$D/rows.jsonl"
tests=$(ls tests/test_cuda_cold_compile.py tests/test_cuda_prelude_parts.py tests/test_cuda_lazy_coarsened.py \
  tests/test_compile_memo.py 2>/dev/null)
part tests 45 python3 -m pytest -q -p no:benchmark -rfE $tests
tail -n 40 "$D/phases.log"; tail -n 3 "$D"/tests.log
