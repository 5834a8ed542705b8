#!/usr/bin/env bash
# Session 18, second H200 call (the tree with Numba's exact type tested first): the costs per
# producer, issue P2.2's whole CUDA table, the CUDA suite with the read-only/JAX/Numba tests.
set -u
export CXX=/usr/bin/g++
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
SKBUILD_CMAKE_DEFINE=CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF python -m pip install -q --no-build-isolation --config-settings=build-dir=/tmp/metalcall-gpu-build . > "$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
echo "ready at $(el) s; $(git rev-parse --short HEAD 2>/dev/null)"
timeout 90 python .devcarry/s18/jax_numba_args.py > "$OUT/producers.txt" 2>&1; echo "producers rc $? at $(el) s"
grep -v "^WARNING\|^I0000\|^W0000" "$OUT/producers.txt" | tail -6
timeout 220 python benchmarks/bench_peers_cuda.py --rounds 5 --json "$OUT/peers.json" > "$OUT/peers.txt" 2>&1
echo "peers rc $? at $(el) s"
grep -E "^\| " "$OUT/peers.txt" | awk -F'|' '{print $2 "|" $5}' | sed -n 3,40p | cut -c1-200
timeout $(( 590 - $(el) )) python -m pytest -p no:benchmark -n 16 tests/test_read_only_memory.py tests -k "cuda or gpu or foreign or read_only or jax or numba" -m "not slow" -q -rfE > "$OUT/suite.txt" 2>&1
echo "suite rc $? at $(el) s"; grep -E "^(FAILED|ERROR) |[0-9]+ (passed|failed)" "$OUT/suite.txt" | tail -12
