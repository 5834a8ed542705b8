#!/usr/bin/env bash
# Session 12's second H200 call: the fused-chain diagnosis, the CUDA exit soak at 1,000 runs (eight
# soaks side by side, 125 seeds each), P2.2's CUDA rows (foreign arguments, reductions at 1e8, fused
# chains) and the CPU call cost on the 16-core host. cwd = the repository root; $OUT empty.
set -u
export CXX=/usr/bin/g++
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
git log -1 --format='%h %s' > "$OUT/commit.txt"
SKBUILD_CMAKE_DEFINE=CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF python -m pip install -q --no-build-isolation \
  --config-settings=build-dir=/tmp/metalcall-gpu-build . > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "built at $(el) s"
timeout 90 python .devcarry/lead/fused_diag2.py > "$OUT/diag2.txt" 2>&1; echo "diag2 rc $? at $(el) s"
for k in 0 1 2 3 4 5 6 7; do
  METALCALL_EXIT_SOAK=125 METALCALL_EXIT_SOAK_FIRST=$((k * 125)) timeout 200 \
    python -m pytest -q tests/reliability/test_exit_soak.py -k cuda -p no:cacheprovider -p no:benchmark > "$OUT/soak$k.log" 2>&1 &
done
wait
echo "soak done at $(el) s"; for k in 0 1 2 3 4 5 6 7; do tail -1 "$OUT/soak$k.log"; done
timeout 170 python benchmarks/bench_peers_cuda.py --rounds 5 --only arguments,reductions-1e+08,fused-1e+07,fused-1e+08 \
  > "$OUT/peers_cuda.txt" 2>&1; echo "peers rc $? at $(el) s"
timeout 60 python benchmarks/bench_call_cpu_time.py --calls 100000 --rounds 7 --replay > "$OUT/call_cpu.txt" 2>&1
echo "cpu rc $? at $(el) s"
uptime
