#!/usr/bin/env bash
# Session 14's first H200 call: the blocking stream (no event for legacy-stream producers) and
# reads queued behind the kernel; A/B of the arguments row; reductions; sin variants; CUDA suite.
set -u
export CXX=/usr/bin/g++
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
SKBUILD_CMAKE_DEFINE=CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF python -m pip install -q --no-build-isolation --config-settings=build-dir=/tmp/metalcall-gpu-build . > "$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
echo "built at $(el) s"; nproc; which perf || true
timeout 240 python -m pytest -q -p no:benchmark -n 16 tests -k "cuda or gpu" -m "not slow" -x -q > "$OUT/suite.txt" 2>&1
echo "suite rc $? at $(el) s"; tail -3 "$OUT/suite.txt"; grep -E "^(FAILED|ERROR)" "$OUT/suite.txt" | head -20
for mode in new old new old; do
  if [ $mode = old ]; then export METALCALL_EXPERIMENT_NONBLOCKING=1; else unset METALCALL_EXPERIMENT_NONBLOCKING; fi
  timeout 60 python benchmarks/bench_peers_cuda.py --rounds 5 --only arguments > "$OUT/args_$mode.txt" 2>&1
  echo "args $mode rc $? at $(el) s"; grep -E "^\| three" "$OUT/args_$mode.txt" | cut -c1-400
done
unset METALCALL_EXPERIMENT_NONBLOCKING
timeout 120 python benchmarks/bench_peers_cuda.py --rounds 5 --only reductions-1e+06,reductions-1e+07,reductions-1e+08 > "$OUT/reductions.txt" 2>&1
echo "reductions rc $? at $(el) s"; grep -E "^\| (float|int|bool)" "$OUT/reductions.txt" | cut -c1-330
timeout 60 python .devcarry/s13/host_profile.py > "$OUT/host_profile.txt" 2>&1; echo "host_profile rc $? at $(el) s"; head -30 "$OUT/host_profile.txt"
timeout 90 python .devcarry/s14/sin_variants.py > "$OUT/sin.txt" 2>&1; echo "sin rc $? at $(el) s"; cat "$OUT/sin.txt" | tail -32
