#!/usr/bin/env bash
# Session 13's third H200 call: the CUDA suite with the corpora, one against two launches of reductions, s13-checked-ints' GPU cases, P2.2's argument and reduction rows,
# exit during a first compile (300 runs) and the exit soak.
set -u
export CXX=/usr/bin/g++
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export METALCALL_CORPUS=.devcarry/corpus METALCALL_CORPUS2=.devcarry/corpus2 METALCALL_CORPUS3=.devcarry/corpus3
SUITE_CAP=210 OUT=$OUT/checks bash tools/gpu_host_checks.sh suite 2>&1 | tail -14
echo "suite done at $(el) s"
timeout 90 python .devcarry/s13/one_launch_ab.py > "$OUT/one_launch_ab.txt" 2>&1; echo "ab rc $? at $(el) s"; cat "$OUT/one_launch_ab.txt" | tail -14
timeout 60 bash .devcarry/s13-checked-ints/run.sh 2>&1 | tail -5; echo "checked-ints at $(el) s"
timeout 110 python benchmarks/bench_peers_cuda.py --rounds 5 --only arguments,reductions-1e+06,reductions-1e+07,reductions-1e+08 > "$OUT/peers.txt" 2>&1
echo "peers rc $? at $(el) s"; grep -E "^\| (float|int|bool|three)" "$OUT/peers.txt" | tail -23 | cut -c1-300
timeout 80 python .devcarry/s13/first_compile_soak.py cuda 400 12 60 > "$OUT/first_new.txt" 2>&1; echo "first rc $? at $(el) s"; tail -1 "$OUT/first_new.txt"
left=$(( 530 - $(el) ))
if [ $left -gt 40 ]; then
  timeout $left python .devcarry/s12/soak.py cuda 1000 12 $(( left - 25 )) > "$OUT/soak.txt" 2>&1; echo "soak rc $? at $(el) s"
  tail -1 "$OUT/soak.txt"; grep -v "rc 0 " "$OUT/soak.txt" | head -40 > "$OUT/soak_failures.txt"
fi
echo "end at $(el) s"
