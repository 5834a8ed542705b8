#!/usr/bin/env bash
# Session 15's first H200 call: the GPU interrupt test's read mode (s14/run7), then host profiles.
set -u
export CXX=/usr/bin/g++
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
SKBUILD_CMAKE_DEFINE=CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF python -m pip install -q --no-build-isolation --config-settings=build-dir=/tmp/metalcall-gpu-build . > "$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
echo "built at $(el) s"
timeout 120 python -m pytest -p no:benchmark -n 8 -q -rfE tests/reliability/test_interrupt.py tests/test_buffer.py -k "cuda" > "$OUT/tests.txt" 2>&1
echo "tests rc $? at $(el) s"; grep -E "^(FAILED|ERROR) |[0-9]+ (passed|failed)" "$OUT/tests.txt" | tail -8
timeout 200 python .devcarry/s15/prof_host.py > "$OUT/prof.txt" 2>&1; echo "prof rc $? at $(el) s"
timeout 60 python benchmarks/bench_mnp_host.py --device cuda > "$OUT/host.txt" 2>&1; echo "host rc $? at $(el) s"
nproc; python -c "import platform; print(platform.processor())"; lscpu | grep -i "model name"
