#!/bin/bash
# p22-calls (issue P2.2 items 1, 3, 6), session 5: foreign tensors as kernel arguments after the
# per-object description cache, reductions at 1e6-1e8 and fused chains at 1e7/1e8 beside
# CuPy/torch, with where the host time goes (.devcarry/p22-calls/diag.py: per-read costs,
# ordering against the producer's stream, scalar read-back by host view vs copy, both fused
# chains iteration by iteration) and the CUDA tests of the changed code. <= 4 min.
set -u
D="$OUT/p22-calls"
mkdir -p "$D"
cd "$(dirname "$0")/../.."
{ date -u; git log -1 --format='%h %s' 2>/dev/null; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; uptime; } > "$D/machine.txt" 2>&1
T=$(ls tests/test_gpu_argument_cache.py tests/test_foreign_arguments.py tests/test_dlpack.py tests/test_gpu_import.py 2>/dev/null)
timeout 45 python3 -m pytest -q -p no:cacheprovider $T > "$D/tests.log" 2>&1; echo "rc $?" >> "$D/tests.log"
timeout 95 python3 .devcarry/p22-calls/diag.py > "$D/diag.log" 2>&1; echo "rc $?" >> "$D/diag.log"
timeout 15 python3 benchmarks/bench_mnp_host.py --device cuda --number 2000 > "$D/mnp_host.log" 2>&1; echo "rc $?" >> "$D/mnp_host.log"
timeout 85 python3 benchmarks/bench_peers_cuda.py --rounds 5 \
  --only arguments,reductions-1e+06,reductions-1e+07,reductions-1e+08,fused-1e+07,fused-1e+08 \
  --json "$D/peers.jsonl" > "$D/peers.log" 2>&1; echo "rc $?" >> "$D/peers.log"
tail -3 "$D"/*.log
