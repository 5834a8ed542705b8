#!/usr/bin/env bash
# Session 17, third H200 call (the final tree: producers held by the call's Completion, which the
# cycle collector sees while it holds any): the split, issue P2.2's whole CUDA table, the CUDA suite.
set -u
export CXX=/usr/bin/g++
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
SKBUILD_CMAKE_DEFINE=CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF python -m pip install -q --no-build-isolation --config-settings=build-dir=/tmp/metalcall-gpu-build . > "$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
echo "ready at $(el) s"
timeout 90 python .devcarry/s15/args_parts.py > "$OUT/args_parts.txt" 2>&1; echo "args_parts rc $? at $(el) s"
tail -17 "$OUT/args_parts.txt"
timeout 200 python benchmarks/bench_peers_cuda.py --rounds 5 --json "$OUT/peers.json" > "$OUT/peers.txt" 2>&1
echo "peers rc $? at $(el) s"
grep -E "^\| " "$OUT/peers.txt" | grep -i "argument" | head -2 | cut -c1-400
grep -E "^\| " "$OUT/peers.txt" | awk -F'|' '{print $2 "|" $5}' | sed -n 3,40p | cut -c1-200
timeout $(( 590 - $(el) )) python -m pytest -p no:benchmark -n 16 tests -k "cuda or gpu or foreign" -m "not slow" -q -rfE > "$OUT/suite.txt" 2>&1
echo "suite rc $? at $(el) s"; grep -E "^(FAILED|ERROR) |[0-9]+ (passed|failed)" "$OUT/suite.txt" | tail -12
