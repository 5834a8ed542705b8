#!/usr/bin/env bash
# Session 15's fifth H200 call: issue P2.2's whole CUDA table at main's head (bench_peers_cuda.py).
set -u
export CXX=/usr/bin/g++
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
python -c "import metalcall" 2>/dev/null || SKBUILD_CMAKE_DEFINE=CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF python -m pip install -q --no-build-isolation --config-settings=build-dir=/tmp/metalcall-gpu-build . > "$OUT/build.txt" 2>&1
echo "ready at $(el) s"
timeout $(( 570 - $(el) )) python benchmarks/bench_peers_cuda.py --rounds 5 --json "$OUT/peers.json" > "$OUT/peers.txt" 2>&1
echo "peers rc $? at $(el) s"; grep -E "^\| " "$OUT/peers.txt" | tail -40 | cut -c1-200
