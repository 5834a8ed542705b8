#!/usr/bin/env bash
# Session 14's fifth H200 call: where a call with three torch tensors spends its host time (perf).
set -u
export CXX=/usr/bin/g++
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
SKBUILD_CMAKE_DEFINE=CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF CMAKE_BUILD_TYPE=RelWithDebInfo python -m pip install -q --no-build-isolation --config-settings=build-dir=/tmp/metalcall-gpu-build --config-settings=cmake.build-type=RelWithDebInfo . > "$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
echo "built at $(el) s"; which perf py-spy gdb 2>&1 | head
for w in own torch cupy; do timeout 30 python .devcarry/s14/args_loop.py $w 3; done
if command -v perf >/dev/null; then
  for w in torch own; do
    timeout 60 perf record -F 15000 -g -o "$OUT/perf_$w.data" python .devcarry/s14/args_loop.py $w 6 > /dev/null 2>&1
    perf report -i "$OUT/perf_$w.data" --stdio --no-children -g none --percent-limit 0.4 2>/dev/null | grep -v "^#" | grep -v "^$" | head -90 > "$OUT/perf_$w.txt"
    perf report -i "$OUT/perf_$w.data" --stdio --no-children --sort dso --percent-limit 0.5 2>/dev/null | grep -v "^#" | grep -v "^$" | head -30 > "$OUT/perf_dso_$w.txt"
    rm -f "$OUT/perf_$w.data"
    echo "== $w by dso"; cat "$OUT/perf_dso_$w.txt"
  done
fi
echo "end at $(el) s"
