#!/usr/bin/env bash
# Session 17, first H200 call: an unstripped build, py-spy --native samples of 1-element statement
# calls with own Buffers, three torch tensors and three CuPy arrays, and the args_parts split.
set -u
export CXX=/usr/bin/g++
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
SKBUILD_CMAKE_DEFINE="CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF;CMAKE_STRIP=/bin/true" python -m pip install -q --no-build-isolation --config-settings=build-dir=/tmp/metalcall-gpu-build . > "$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
echo "ready at $(el) s"; file $(python -c "import metalcall._core as c; print(c.__file__)") | grep -o "not stripped"
SPY=/tmp/site/bin/py-spy; ls /tmp/site/bin
for w in own torch cupy; do
  timeout 60 $SPY record --native --rate 400 --format raw -o "$OUT/spy_$w.txt" -- python .devcarry/s17/prof_args.py $w 6 > "$OUT/spy_$w.log" 2>&1
  echo "$w rc $? at $(el) s: $(grep us/call $OUT/spy_$w.log) $(grep -o 'Samples: .*' $OUT/spy_$w.log)"
  python .devcarry/s17/agg.py "$OUT/spy_$w.txt" > "$OUT/agg_$w.txt" 2>&1
done
for w in own torch cupy; do python .devcarry/s17/prof_args.py $w 3; done
timeout 90 python .devcarry/s15/args_parts.py > "$OUT/args_parts.txt" 2>&1; echo "args_parts rc $? at $(el) s"
tail -20 "$OUT/args_parts.txt"
head -50 "$OUT/agg_torch.txt"
