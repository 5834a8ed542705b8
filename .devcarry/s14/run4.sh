#!/usr/bin/env bash
# Session 14's fourth H200 call: the fused chains at 1e7 again (a 1.36x row in the third call's table).
set -u
export CXX=/usr/bin/g++
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
python -c "import metalcall" 2>/dev/null || SKBUILD_CMAKE_DEFINE=CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF python -m pip install -q --no-build-isolation --config-settings=build-dir=/tmp/metalcall-gpu-build . > "$OUT/build.txt" 2>&1
echo "ready at $(el) s"
for i in 1 2; do
  timeout 100 python benchmarks/bench_peers_cuda.py --rounds 5 --only fused-1e+07,fused-1e+08 > "$OUT/fused_$i.txt" 2>&1
  echo "fused $i rc $? at $(el) s"; grep -E "^\| fused" "$OUT/fused_$i.txt" | head -4 | cut -c1-250
done
timeout 60 python .devcarry/s14/sin_variants.py > "$OUT/sin.txt" 2>&1; echo "sin rc $? at $(el) s"; grep -v "^host time" "$OUT/sin.txt" | tail -26
