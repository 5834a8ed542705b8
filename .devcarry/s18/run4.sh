#!/usr/bin/env bash
# Session 18's final tree, for the next session's first H200 call (session 18's fourth call was
# refused: no machine lent): issue P2.2's whole CUDA table in one call (torch, CuPy, Numba and JAX
# arguments included), the memory-pressure test alone, the CUDA suite.
set -u
export CXX=/usr/bin/g++
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
SKBUILD_CMAKE_DEFINE=CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF python -m pip install -q --no-build-isolation --config-settings=build-dir=/tmp/metalcall-gpu-build . > "$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
echo "ready at $(el) s"
timeout 260 python benchmarks/bench_peers_cuda.py --rounds 5 --json "$OUT/peers.json" > "$OUT/peers.txt" 2>&1
echo "peers rc $? at $(el) s"
grep -E "^\| " "$OUT/peers.txt" | awk -F'|' '{print $2 "|" $3 "|" $5}' | sed -n 3,44p | cut -c1-260
timeout 60 python -m pytest -p no:benchmark -q -rfEs tests/test_cuda_memory_pressure.py > "$OUT/pressure.txt" 2>&1
echo "pressure rc $? at $(el) s"; tail -2 "$OUT/pressure.txt"
timeout $(( 590 - $(el) )) python -m pytest -p no:benchmark -n 16 tests -k "cuda or gpu or foreign or read_only or jax or numba" -m "not slow" -q -rfE > "$OUT/suite.txt" 2>&1
echo "suite rc $? at $(el) s"; grep -E "^(FAILED|ERROR) |[0-9]+ (passed|failed)" "$OUT/suite.txt" | tail -14
