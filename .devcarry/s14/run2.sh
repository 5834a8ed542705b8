#!/usr/bin/env bash
# Session 14's second H200 call: the CUDA suite with the three corpora, then P2.2's CUDA rows
# (arguments, reductions, fused chains) and the sin variants.
set -u
export CXX=/usr/bin/g++
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
SKBUILD_CMAKE_DEFINE=CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF python -m pip install -q --no-build-isolation --config-settings=build-dir=/tmp/metalcall-gpu-build . > "$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
echo "built at $(el) s"
export METALCALL_CORPUS=$PWD/.devcarry/corpus METALCALL_CORPUS2=$PWD/.devcarry/corpus2 METALCALL_CORPUS3=$PWD/.devcarry/corpus3
timeout 280 python -m pytest -p no:benchmark -n 16 tests -k "cuda or gpu" -m "not slow" -q -rfE > "$OUT/suite.txt" 2>&1
echo "suite rc $? at $(el) s"; grep -E "^(FAILED|ERROR) |[0-9]+ (passed|failed)" "$OUT/suite.txt" | tail -25
timeout 60 python -m pytest -p no:benchmark -q tests/numpy/test_fusion_four_a_thread.py tests/test_buffer.py -k "cuda" > "$OUT/new_tests.txt" 2>&1; echo "new tests rc $?"; tail -2 "$OUT/new_tests.txt"
left=$(( 540 - $(el) ))
timeout $(( left > 240 ? 240 : left )) python benchmarks/bench_peers_cuda.py --rounds 5 --only arguments,fused-1e+07,fused-1e+08,reductions-1e+06,reductions-1e+07,reductions-1e+08 > "$OUT/peers.txt" 2>&1
echo "peers rc $? at $(el) s"; grep -E "^\| " "$OUT/peers.txt" | cut -c1-330
