#!/usr/bin/env bash
# Session 14's seventh H200 call: Ctrl-C during a Buffer.read queued behind a kernel.
set -u
export CXX=/usr/bin/g++
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
SKBUILD_CMAKE_DEFINE=CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF python -m pip install -q --no-build-isolation --config-settings=build-dir=/tmp/metalcall-gpu-build . > "$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
echo "built at $(el) s"
timeout 90 python -m pytest -p no:benchmark -n 8 -q -rfE tests/reliability/test_interrupt.py tests/test_buffer.py -k "cuda" > "$OUT/tests.txt" 2>&1
echo "tests rc $? at $(el) s"; grep -E "^(FAILED|ERROR) |[0-9]+ (passed|failed)" "$OUT/tests.txt" | tail -8
