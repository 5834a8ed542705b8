#!/usr/bin/env bash
# Session 13's first H200 call: build; exit during a first compile (new vs old exit wait, one
# build); host profile of reductions, scalar reads and foreign arguments; P2.2 reduction rows;
# the exit soak of tests/reliability.
set -u
export CXX=/usr/bin/g++
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
python -V; nproc
SKBUILD_CMAKE_DEFINE=CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF python -m pip install -q --no-build-isolation --config-settings=build-dir=/tmp/metalcall-gpu-build . > "$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
echo "built at $(el) s"
timeout 100 python .devcarry/s13/first_compile_soak.py cuda 400 12 80 old > "$OUT/first_old.txt" 2>&1; echo "old rc $? at $(el) s"
tail -1 "$OUT/first_old.txt"; grep -m3 -A12 "^run" "$OUT/first_old.txt" | head -40
timeout 100 python .devcarry/s13/first_compile_soak.py cuda 400 12 80 > "$OUT/first_new.txt" 2>&1; echo "new rc $? at $(el) s"
tail -1 "$OUT/first_new.txt"; grep -m2 -A12 "^run" "$OUT/first_new.txt" | head -30
timeout 120 python .devcarry/s13/host_profile.py > "$OUT/host_profile.txt" 2>&1; echo "profile rc $? at $(el) s"
cat "$OUT/host_profile.txt"
timeout 110 python benchmarks/bench_peers_cuda.py --rounds 5 --only arguments,reductions-1e+06,reductions-1e+07,reductions-1e+08 > "$OUT/peers.txt" 2>&1
echo "peers rc $? at $(el) s"; grep -E "^\| (float|int|bool|three)" "$OUT/peers.txt" | cut -c1-250
left=$(( 530 - $(el) ))
if [ $left -gt 40 ]; then
  timeout $left python .devcarry/s12/soak.py cuda 1000 12 $(( left - 25 )) > "$OUT/soak.txt" 2>&1; echo "soak rc $? at $(el) s"
  tail -1 "$OUT/soak.txt"; grep -v "rc 0 " "$OUT/soak.txt" | head -40 > "$OUT/soak_failures.txt"
fi
echo "end at $(el) s"
