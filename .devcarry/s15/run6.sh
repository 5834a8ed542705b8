#!/usr/bin/env bash
# Session 15's sixth H200 call: producers released with the GIL back after a wait (DeferReleases):
# the foreign-argument and GPU tests, args_parts.py, then issue P2.2's whole CUDA table again.
set -u
export CXX=/usr/bin/g++
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
SKBUILD_CMAKE_DEFINE=CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF python -m pip install -q --no-build-isolation --config-settings=build-dir=/tmp/metalcall-gpu-build . > "$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
echo "built at $(el) s"
timeout 150 python -m pytest -p no:benchmark -n 8 -q -rfE tests/test_gpu_argument_cache.py tests/test_foreign_arguments.py tests/test_gpu_import.py tests/test_dlpack.py tests/test_async.py tests/test_threads.py tests/reliability -k "cuda or torch or cupy or gpu" > "$OUT/tests.txt" 2>&1
echo "tests rc $? at $(el) s"; grep -E "^(FAILED|ERROR) |[0-9]+ (passed|failed)" "$OUT/tests.txt" | tail -10
timeout 60 python .devcarry/s15/args_parts.py > "$OUT/parts.txt" 2>&1; echo "parts rc $? at $(el) s"; head -9 "$OUT/parts.txt"
timeout $(( 560 - $(el) )) python benchmarks/bench_peers_cuda.py --rounds 5 --json "$OUT/peers.json" > "$OUT/peers.txt" 2>&1
echo "peers rc $? at $(el) s"; grep -E "^\| (three|float\(mnp.sum|fused)" "$OUT/peers.txt" | tail -8 | cut -c1-260
