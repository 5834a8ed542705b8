#!/usr/bin/env bash
# Session 16's first H200 call: issue P2.2's whole CUDA table (bench_peers_cuda.py) after the torch
# accessor change, the foreign-argument decomposition (args_parts.py), then the CUDA suite.
set -u
export CXX=/usr/bin/g++
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
python -c "import metalcall" 2>/dev/null || SKBUILD_CMAKE_DEFINE=CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF python -m pip install -q --no-build-isolation --config-settings=build-dir=/tmp/metalcall-gpu-build . > "$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
echo "ready at $(el) s ($(git log --oneline -1 2>/dev/null || echo no git))"
timeout 300 python benchmarks/bench_peers_cuda.py --rounds 5 --json "$OUT/peers.json" > "$OUT/peers.txt" 2>&1
echo "peers rc $? at $(el) s"
timeout 90 python .devcarry/s15/args_parts.py > "$OUT/args_parts.txt" 2>&1; echo "args_parts rc $? at $(el) s"
export METALCALL_CORPUS=$PWD/.devcarry/corpus METALCALL_CORPUS2=$PWD/.devcarry/corpus2 METALCALL_CORPUS3=$PWD/.devcarry/corpus3
timeout $(( 585 - $(el) )) python -m pytest -p no:benchmark -n 16 tests -k "cuda or gpu or foreign" -m "not slow" -q -rfE > "$OUT/suite.txt" 2>&1
echo "suite rc $? at $(el) s"; grep -E "^(FAILED|ERROR) |[0-9]+ (passed|failed)" "$OUT/suite.txt" | tail -12
grep -E "^\| " "$OUT/peers.txt" | grep -i "argument\|any\|sum, 1e+07\|fused" | cut -c1-260
tail -25 "$OUT/args_parts.txt"
