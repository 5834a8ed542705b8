#!/usr/bin/env bash
# Session 18, third H200 call: every new CUDA block checked against free memory (the test that
# fills the GPU, run alone), the CUDA suite (JAX no longer preallocating), the costs per producer.
set -u
export CXX=/usr/bin/g++
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
SKBUILD_CMAKE_DEFINE=CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF python -m pip install -q --no-build-isolation --config-settings=build-dir=/tmp/metalcall-gpu-build . > "$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
echo "ready at $(el) s"
timeout 120 python -m pytest -p no:benchmark -q -rfEs tests/test_cuda_memory_pressure.py > "$OUT/pressure.txt" 2>&1
echo "pressure rc $? at $(el) s"; grep -E "^(FAILED|ERROR|SKIPPED) |^E  |[0-9]+ (passed|failed)" "$OUT/pressure.txt" | head -12
timeout 30 python .devcarry/s18/jax_numba_args.py > "$OUT/producers.txt" 2>&1; echo "producers rc $? at $(el) s"
grep -v "^WARNING\|^I0000\|^W0000" "$OUT/producers.txt" | tail -5
nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader
timeout $(( 590 - $(el) )) python -m pytest -p no:benchmark -n 16 tests -k "cuda or gpu or foreign or read_only or jax or numba" -m "not slow" -q -rfE > "$OUT/suite.txt" 2>&1
echo "suite rc $? at $(el) s"; grep -E "^(FAILED|ERROR) |[0-9]+ (passed|failed)" "$OUT/suite.txt" | tail -14
