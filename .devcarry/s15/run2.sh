#!/usr/bin/env bash
# Session 15's second H200 call: the C++ fusion path and leaner scalar reads; CUDA tests of the
# touched areas, host profiles, and the fused/reduction/argument rows against CuPy and torch.
set -u
export CXX=/usr/bin/g++
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
SKBUILD_CMAKE_DEFINE=CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF python -m pip install -q --no-build-isolation --config-settings=build-dir=/tmp/metalcall-gpu-build . > "$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
echo "built at $(el) s"
timeout 150 python -m pytest -p no:benchmark -n 8 -q -rfE tests/numpy/test_fusion.py tests/numpy/test_fusion_structures.py tests/numpy/test_fusion_four_a_thread.py tests/numpy/test_elementwise.py tests/numpy/test_array.py tests/numpy_kernels/test_reduce.py -k "cuda" > "$OUT/tests.txt" 2>&1
echo "tests rc $? at $(el) s"; grep -E "^(FAILED|ERROR) |[0-9]+ (passed|failed)" "$OUT/tests.txt" | tail -8
timeout 60 python benchmarks/bench_mnp_host.py --device cuda > "$OUT/host.txt" 2>&1; echo "host rc $? at $(el) s"; cat "$OUT/host.txt"
timeout 100 python .devcarry/s15/prof_host.py > "$OUT/prof.txt" 2>&1; echo "prof rc $? at $(el) s"
left=$(( 560 - $(el) ))
timeout $(( left > 300 ? 300 : left )) python benchmarks/bench_peers_cuda.py --rounds 5 --only fused-1e+07,fused-1e+08,reductions-1e+06,reductions-1e+07,arguments > "$OUT/peers.txt" 2>&1
echo "peers rc $? at $(el) s"
