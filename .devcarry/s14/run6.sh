#!/usr/bin/env bash
# Session 14's sixth H200 call: the ordering test of the blocking stream, and the CUDA tests of
# the files this session touched.
set -u
export CXX=/usr/bin/g++
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
SKBUILD_CMAKE_DEFINE=CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF python -m pip install -q --no-build-isolation --config-settings=build-dir=/tmp/metalcall-gpu-build . > "$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
echo "built at $(el) s"
timeout 150 python -m pytest -p no:benchmark -n 16 -q -rfE tests/test_gpu_argument_cache.py tests/test_foreign_arguments.py tests/test_gpu_import.py tests/test_buffer.py tests/test_replay.py tests/test_dlpack.py tests/numpy/test_fusion_four_a_thread.py tests/numpy/test_fusion.py -k "cuda or torch or cupy or default_stream" > "$OUT/tests.txt" 2>&1
echo "tests rc $? at $(el) s"; grep -E "^(FAILED|ERROR) |[0-9]+ (passed|failed)" "$OUT/tests.txt" | tail -15
