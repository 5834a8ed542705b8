#!/usr/bin/env bash
# Session 17, fourth H200 call: what Numba and JAX arrays cost as kernel arguments (never measured).
set -u
export CXX=/usr/bin/g++
SKBUILD_CMAKE_DEFINE=CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF python -m pip install -q --no-build-isolation --config-settings=build-dir=/tmp/metalcall-gpu-build . > "$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
timeout 150 python .devcarry/s17/jax_numba_args.py 2>&1 | grep -v "^WARNING\|^I0000\|^W0000" | tail -25
