#!/usr/bin/env bash
# Session 15's fourth H200 call: the CUDA suite with the three corpora at main's head (the C++
# fusion path, pinned read slots, whole-array reduction runners, bit-folding any/all).
set -u
export CXX=/usr/bin/g++
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
SKBUILD_CMAKE_DEFINE=CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF python -m pip install -q --no-build-isolation --config-settings=build-dir=/tmp/metalcall-gpu-build . > "$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
echo "built at $(el) s"
export METALCALL_CORPUS=$PWD/.devcarry/corpus METALCALL_CORPUS2=$PWD/.devcarry/corpus2 METALCALL_CORPUS3=$PWD/.devcarry/corpus3
timeout 300 python -m pytest -p no:benchmark -n 16 tests -k "cuda or gpu" -m "not slow" -q -rfE > "$OUT/suite.txt" 2>&1
echo "suite rc $? at $(el) s"; grep -E "^(FAILED|ERROR) |[0-9]+ (passed|failed)" "$OUT/suite.txt" | tail -25
timeout 120 python -m pytest -p no:benchmark -n 8 -q -rfE tests/numpy/test_fusion_structures.py tests/test_buffer.py tests/numpy_kernels/test_reduce.py tests/reliability/test_interrupt.py -k "cuda or threads_at_once or whole" > "$OUT/new_tests.txt" 2>&1; echo "new tests rc $?"; grep -E "^(FAILED|ERROR) |[0-9]+ (passed|failed)" "$OUT/new_tests.txt" | tail -8
