#!/usr/bin/env bash
# s11-exits, for the lead's H200 run (cwd = the repository root with the package built and
# installed, $OUT empty): the CUDA cases of the two conformance files on SIMD-group functions on
# the way out of loops (docs/design.md "SIMD-group functions on the way out of a loop"): braced
# lists returned from loops (le_return_braces, le_return_braced_kinds), a return from an inner
# loop (le_return_through_inner_loop), and test_divergent_simd_calls.py as a regression check.
# Writes $OUT/s11-exits/env.txt and tests.log. About a minute.
set -u
out="$OUT/s11-exits"
mkdir -p "$out"
{
  echo "commit $(git rev-parse --short HEAD 2>/dev/null) $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
} > "$out/env.txt"
timeout 220 python -m pytest -q -rfE -p no:cacheprovider -k cuda \
  tests/conformance/test_simd_loop_exits.py tests/conformance/test_divergent_simd_calls.py \
  > "$out/tests.log" 2>&1
echo "pytest rc $?" >> "$out/tests.log"
grep -E "^(FAILED|ERROR)" "$out/tests.log" | head -20
tail -3 "$out/tests.log"
