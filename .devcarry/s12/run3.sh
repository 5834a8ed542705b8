#!/usr/bin/env bash
# Session 12's third H200 call: the constant-copy commit's CUDA tests, the fused chains again, the
# host-path profile of mnp.sum and a fused chain at 1e8, and the CUDA exit soak (1,000 runs, 12 side
# by side, a line per run). cwd = the repository root; $OUT empty.
set -u
export CXX=/usr/bin/g++
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
git log -1 --format='%h %s' > "$OUT/commit.txt"
SKBUILD_CMAKE_DEFINE=CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF python -m pip install -q --no-build-isolation \
  --config-settings=build-dir=/tmp/metalcall-gpu-build . > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "built at $(el) s"
export METALCALL_CORPUS3=.devcarry/corpus3
timeout 120 python -m pytest -q -p no:cacheprovider -p no:benchmark -n 8 tests/test_cuda_coarsened.py tests/test_cuda_lazy_coarsened.py \
  tests/corpus/test_moltenvk_kernels.py -k cuda > "$OUT/tests.txt" 2>&1; echo "tests rc $? at $(el) s"; tail -3 "$OUT/tests.txt"
timeout 90 python benchmarks/bench_peers_cuda.py --rounds 5 --only fused-1e+07,fused-1e+08 > "$OUT/fused.txt" 2>&1
echo "fused rc $? at $(el) s"; grep "^| fused" "$OUT/fused.txt" | tail -4
timeout 90 python .devcarry/s12/host_profile.py > "$OUT/host_profile.txt" 2>&1; echo "profile rc $? at $(el) s"
timeout 250 python .devcarry/s12/soak.py cuda 1000 12 200 > "$OUT/soak.txt" 2>&1; echo "soak rc $? at $(el) s"
tail -1 "$OUT/soak.txt"; grep -v "rc 0 " "$OUT/soak.txt" | head -20
