#!/bin/bash
# p23-linalg (issue P2.3 speed targets): the CUDA linalg/fft tests, then bench rows beside CuPy:
# fft 2^20 complex64 vs cuFFT, batched small solves, svd 512^2 and eigh 256^2/512^2 vs cuSOLVER
# (eigh from 64^2 on GPUs: the SVD of A + cI by block Jacobi, _linalg_eigh_svd.py).
# Each part has its own time cap so one slow row cannot eat the rest; <= 3 min in all.
set -u
D="$OUT/p23-linalg"
mkdir -p "$D"
cd "$(dirname "$0")/../.."
{ date -u; git log -1 --format='%h %s' 2>/dev/null; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; uptime; } > "$D/machine.txt" 2>&1
part() {  # part NAME SECONDS COMMAND...: runs COMMAND under a cap, log in $D/NAME.log
  local name=$1 cap=$2; shift 2
  local t0=$(date +%s)
  timeout "$cap" "$@" > "$D/$name.log" 2>&1
  echo "rc $? in $(( $(date +%s) - t0 )) s (cap $cap)" >> "$D/$name.log"
}
part tests 60 python3 -m pytest -q -n 8 -p no:benchmark -k "cuda" -rfE \
  tests/numpy/test_linalg.py tests/numpy/test_linalg_composed.py tests/numpy/test_linalg_eigh_svd.py tests/numpy/test_fft.py
part fft 30 python3 benchmarks/bench_fft.py --device cuda --repeat 20
part linalg32 40 python3 benchmarks/bench_mnp_linalg.py --device cuda --dtype float32 --size 512 --repeat 5 \
  --only solve svd eigh --batches 10000x4 1000x32
part linalg64 25 python3 benchmarks/bench_mnp_linalg.py --device cuda --dtype float64 --size 512 --repeat 3 \
  --only svd eigh --batches
part eigh256 20 python3 benchmarks/bench_mnp_linalg.py --device cuda --dtype float32 --size 256 --repeat 5 \
  --only eigh svd --batches
tail -n 4 "$D"/*.log
