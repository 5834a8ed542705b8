#!/usr/bin/env bash
# Issue P2.0 on CUDA (session 11, s11-corpus): the production-kernel tests (tests/corpus: public
# kernels of the three scratch corpora against NumPy) on the H200's CUDA device, for the lead's run:
# cwd = the repository root with the package built and installed, $OUT empty; the corpora carried
# as .devcarry/corpus, .devcarry/corpus2 and .devcarry/corpus3 (docs/msl-corpus.md says how each is
# filled). Writes $OUT/s11-corpus/: env.txt (commit, GPU, the corpora's file counts), tests.log
# (pytest's report: every failure and skip with its reason). Under 4 minutes.
set -u
out="$OUT/s11-corpus"
mkdir -p "$out"
export METALCALL_CORPUS=.devcarry/corpus METALCALL_CORPUS2=.devcarry/corpus2 METALCALL_CORPUS3=.devcarry/corpus3
{
  echo "commit $(git rev-parse --short HEAD 2>/dev/null) $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
  for c in "$METALCALL_CORPUS" "$METALCALL_CORPUS2" "$METALCALL_CORPUS3"; do
    echo "$c: $(find "$c/" -type f 2>/dev/null | wc -l) files"
  done
} > "$out/env.txt"
cat "$out/env.txt"
# A missing corpus makes its tests skip ("public MSL file not present"): -rs lists the skips.
timeout 220 python -m pytest tests/corpus -q -rfEs -p no:cacheprovider -p no:benchmark -n 16 -k cuda \
  > "$out/tests.log" 2>&1
echo "pytest rc $?" >> "$out/tests.log"
grep -E "^(FAILED|ERROR)" "$out/tests.log" | head -20
tail -2 "$out/tests.log"
