#!/usr/bin/env bash
# Session 12's fourth H200 call: the CUDA suite (corpora carried), P2.2's CUDA rows after the
# scalar read-back and constant-copy commits, and the exit soak with faulthandler and core dumps.
set -u
export CXX=/usr/bin/g++
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
git log -1 --format='%h %s' > "$OUT/commit.txt"
export METALCALL_CORPUS=.devcarry/corpus METALCALL_CORPUS2=.devcarry/corpus2 METALCALL_CORPUS3=.devcarry/corpus3
SUITE_CAP=230 OUT=$OUT/checks bash tools/gpu_host_checks.sh suite 2>&1 | tail -12
echo "suite done at $(el) s"
timeout 130 python benchmarks/bench_peers_cuda.py --rounds 5 \
  --only arguments,reductions-1e+06,reductions-1e+07,reductions-1e+08,fused-1e+07,fused-1e+08 > "$OUT/peers.txt" 2>&1
echo "peers rc $? at $(el) s"; grep -E "^\| (float|int|bool|fused|three)" "$OUT/peers.txt" | tail -24 | cut -c1-260
ulimit -c unlimited; cat /proc/sys/kernel/core_pattern > "$OUT/core_pattern.txt" 2>&1
timeout 170 python .devcarry/s12/soak.py cuda 1000 12 140 > "$OUT/soak.txt" 2>&1; echo "soak rc $? at $(el) s"
tail -1 "$OUT/soak.txt"; grep -v "rc 0 " "$OUT/soak.txt" | head -60 > "$OUT/soak_failures.txt"
core=$(ls -t core* /tmp/core* 2>/dev/null | head -1)
if [ -n "$core" ]; then timeout 60 cuda-gdb -batch -ex "thread apply all bt 12" "$(which python)" "$core" > "$OUT/core_bt.txt" 2>&1; echo "core: $core"; fi
echo "end at $(el) s"
