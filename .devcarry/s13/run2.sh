#!/usr/bin/env bash
# Session 13's second H200 call: one-launch reductions (tests and figures), driver costs of ordering.
set -u
export CXX=/usr/bin/g++
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
git log -1 --format='%h' ; SKBUILD_CMAKE_DEFINE=CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF python -m pip install -q --no-build-isolation --config-settings=build-dir=/tmp/metalcall-gpu-build . > "$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
echo "built at $(el) s"
timeout 150 python -m pytest -q -p no:benchmark -n 16 tests/numpy_kernels/test_reduce.py tests/numpy -k "cuda and (sum or reduc or mean or max or min or any or all or std or var or argm)" > "$OUT/tests.txt" 2>&1
echo "tests rc $? at $(el) s"; tail -4 "$OUT/tests.txt"
timeout 40 python .devcarry/s13/stream_costs.py 2>&1 | tee "$OUT/stream_costs.txt"
timeout 130 python benchmarks/bench_peers_cuda.py --rounds 5 --only reductions-1e+06,reductions-1e+07,reductions-1e+08 > "$OUT/peers.txt" 2>&1
echo "peers rc $? at $(el) s"; grep -E "^\| (float|int|bool)" "$OUT/peers.txt" | cut -c1-330
echo "end at $(el) s"
