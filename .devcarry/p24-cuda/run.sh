#!/usr/bin/env bash
# The CUDA half of P2.4 item 4 (stop checks in strips, docs/design.md "Stopping kernels"), for the
# lead's H200 run: cwd = the repository root with the package built and installed, $OUT empty.
# Writes $OUT/p24-cuda/: tests.log (the CUDA stop and strip tests), bench.log and bench.json
# (benchmarks/bench_stop_checks.py on cuda: each loop kernel with its checks and without, side by
# side), sass_loops.txt (the loop kernels' SASS counts: the FMA loop unrolled in strips). About 3 minutes.
set -u
out="$OUT/p24-cuda"
mkdir -p "$out"
{
  echo "commit $(git rev-parse --short HEAD 2>/dev/null) $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>/dev/null
} > "$out/env.txt"
# The tests: every CUDA case of the stop tests and the loop-shape tests under strips.
timeout 150 python -m pytest -q -x -p no:cacheprovider -n 8 \
  tests/reliability/test_kernel_stop.py tests/reliability/test_loop_strips.py -k cuda \
  > "$out/tests.log" 2>&1
echo "pytest rc $?" >> "$out/tests.log"
tail -3 "$out/tests.log"
# The checks' cost: FMA recurrence and c = a * b as loops, checks on and off in turn.
timeout 90 python benchmarks/bench_stop_checks.py --device cuda --repeats 15 --json "$out/bench.json" \
  > "$out/bench.log" 2>&1
echo "bench rc $?" >> "$out/bench.log"
cat "$out/bench.log"
# NVRTC for the PTX: pip's, else the toolkit's.
if [ -z "${NVRTC_LIBRARY:-}" ] && ! python -c "import sys; sys.path.insert(0, 'tools'); import nvrtc_check; sys.exit(0 if nvrtc_check.find_nvrtc()[0] else 1)"; then
  lib="$(ls /usr/local/cuda/lib64/libnvrtc.so* 2>/dev/null | grep -v builtins | head -1)"
  [ -n "$lib" ] && export NVRTC_LIBRARY="$lib"
fi
# The loop kernels' SASS with checks and without (unrolled strips: more FMULs per branch).
timeout 30 python .devcarry/p24-cuda/sass_of_loops.py > "$out/sass_loops.txt" 2>&1
echo "sass rc $?" >> "$out/sass_loops.txt"
tail -12 "$out/sass_loops.txt"
