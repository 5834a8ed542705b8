#!/usr/bin/env bash
# Session 17, fifth H200 call: the interface parse by interned keys (Numba arrays), its tests, the costs again.
set -u
export CXX=/usr/bin/g++
SKBUILD_CMAKE_DEFINE=CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF python -m pip install -q --no-build-isolation --config-settings=build-dir=/tmp/metalcall-gpu-build . > "$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
timeout 60 python .devcarry/s17/jax_numba_args.py 2>&1 | grep -v "^WARNING\|^I0000\|^W0000" | tail -8
timeout 90 python -m pytest -p no:benchmark -n 16 -q -rfE tests/test_gpu_argument_cache.py tests/test_gpu_import.py tests/test_dlpack.py tests/test_foreign_arguments.py 2>&1 | tail -6
