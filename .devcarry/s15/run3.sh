#!/usr/bin/env bash
# Session 15's third H200 call: where the foreign-argument cost goes (args_parts.py), twice.
set -u
export CXX=/usr/bin/g++
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
python -c "import metalcall" 2>/dev/null || SKBUILD_CMAKE_DEFINE=CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF python -m pip install -q --no-build-isolation --config-settings=build-dir=/tmp/metalcall-gpu-build . > "$OUT/build.txt" 2>&1
echo "ready at $(el) s"
for i in 1 2; do timeout 120 python .devcarry/s15/args_parts.py > "$OUT/parts_$i.txt" 2>&1; echo "parts $i rc $? at $(el) s"; cat "$OUT/parts_$i.txt"; done
