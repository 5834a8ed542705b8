#!/usr/bin/env bash
# Session 13's fourth H200 call: one-launch reductions with device-scope fences (__threadfence),
# their CUDA tests and the one/two-launch A/B, then P2.2's reduction rows.
set -u
export CXX=/usr/bin/g++
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
SKBUILD_CMAKE_DEFINE=CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF python -m pip install -q --no-build-isolation --config-settings=build-dir=/tmp/metalcall-gpu-build . > "$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
echo "built at $(el) s"
timeout 60 python .devcarry/s13/one_launch_ab.py > "$OUT/one_launch_ab.txt" 2>&1; echo "ab rc $? at $(el) s"; cat "$OUT/one_launch_ab.txt" | tail -13
timeout 60 python -m pytest -q -p no:benchmark -n 16 tests/numpy_kernels/test_reduce.py tests/numpy -k "cuda and (sum or reduc or mean or max or min or any or all or std or var or argm or zero_in_order)" > "$OUT/tests.txt" 2>&1
echo "tests rc $? at $(el) s"; tail -2 "$OUT/tests.txt"
left=$(( 150 - $(el) ))
[ $left -gt 30 ] && timeout $left python benchmarks/bench_peers_cuda.py --rounds 3 --only reductions-1e+06,reductions-1e+07,reductions-1e+08 > "$OUT/peers.txt" 2>&1
echo "peers rc $? at $(el) s"; grep -E "^\| (float|int|bool)" "$OUT/peers.txt" | cut -c1-250
