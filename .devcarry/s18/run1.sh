#!/usr/bin/env bash
# Session 18, first H200 call: read-only foreign memory, JAX arrays imported once, Numba arrays
# described from their parts: their tests, the foreign-argument tests, the costs per producer.
set -u
export CXX=/usr/bin/g++
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
SKBUILD_CMAKE_DEFINE=CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF python -m pip install -q --no-build-isolation --config-settings=build-dir=/tmp/metalcall-gpu-build . > "$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
echo "ready at $(el) s"
python -c "import jax, numba, jaxlib; print('jax', jax.__version__, 'numba', numba.__version__)" 2>&1 | tail -1
python -c "import numba.cuda as c, numba.cuda.cudadrv.devicearray as d; a = c.to_device(__import__('numpy').ones(3)); print(type(a), type(a).__module__, d.DeviceNDArray is type(a), type(a.shape), a.stream)" 2>&1 | tail -2
timeout 120 python -m pytest -p no:benchmark -q -rfEs tests/test_read_only_memory.py > "$OUT/ro.txt" 2>&1
echo "read-only tests rc $? at $(el) s"; grep -E "^(FAILED|ERROR|SKIPPED) |[0-9]+ (passed|failed)" "$OUT/ro.txt" | tail -14
timeout 200 python -m pytest -p no:benchmark -n 16 -q -rfE tests/test_gpu_argument_cache.py tests/test_gpu_import.py tests/test_dlpack.py tests/test_foreign_arguments.py tests/test_call_repeat.py > "$OUT/foreign.txt" 2>&1
echo "foreign tests rc $? at $(el) s"; grep -E "^(FAILED|ERROR) |[0-9]+ (passed|failed)" "$OUT/foreign.txt" | tail -12
timeout 90 python .devcarry/s18/jax_numba_args.py 2>&1 | grep -v "^WARNING\|^I0000\|^W0000" | tail -12
