#!/usr/bin/env bash
# Session 18, fourth H200 call (the final tree): the costs per producer and issue P2.2's whole
# CUDA table in one call.
set -u
export CXX=/usr/bin/g++
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
SKBUILD_CMAKE_DEFINE=CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF python -m pip install -q --no-build-isolation --config-settings=build-dir=/tmp/metalcall-gpu-build . > "$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
echo "ready at $(el) s"
timeout 40 python .devcarry/s18/jax_numba_args.py > "$OUT/producers.txt" 2>&1; echo "producers rc $? at $(el) s"
grep -v "^WARNING\|^I0000\|^W0000" "$OUT/producers.txt" | tail -5
timeout 240 python benchmarks/bench_peers_cuda.py --rounds 5 --json "$OUT/peers.json" > "$OUT/peers.txt" 2>&1
echo "peers rc $? at $(el) s"
grep -E "^\| " "$OUT/peers.txt" | awk -F'|' '{print $2 "|" $5}' | sed -n 3,40p | cut -c1-160
timeout 40 python .devcarry/s18/jax_numba_args.py > "$OUT/producers2.txt" 2>&1; echo "producers again rc $? at $(el) s"
grep -v "^WARNING\|^I0000\|^W0000" "$OUT/producers2.txt" | tail -5
