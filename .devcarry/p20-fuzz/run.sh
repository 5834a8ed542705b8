#!/bin/bash
# p20-fuzz (issue P2.0 item 5): the differential fuzzer's GPU campaign (tools/msl_fuzz) on the CPU
# backend and CUDA, one worker per core, under a time cap: FUZZ_PROGRAMS programs (default 20000)
# or FUZZ_SECONDS of campaign (default 330), whichever ends first; FUZZ_SEED (default 9000, 1000
# programs a seed), FUZZ_DEVICES (default cpu,cuda). Programs with function constants (about 12%,
# each a build of its own per device) run one in four. Output in $OUT/p20-fuzz: machine.txt,
# campaign.log, summary.json (programs run, results by device and category, seconds by phase and
# per program, the first 300 findings), findings/<device>/*.metal (at most 100 a device: source,
# difference, replay command).
set -u
D="$OUT/p20-fuzz"
mkdir -p "$D"
cd "$(dirname "$0")/../.."
PROGRAMS="${FUZZ_PROGRAMS:-20000}"
SECONDS_CAP="${FUZZ_SECONDS:-330}"
SEED="${FUZZ_SEED:-9000}"
DEVICES="${FUZZ_DEVICES:-cpu,cuda}"
JOBS="$(nproc)"
{ date -u; git log -1 --format='%h %s' 2>/dev/null; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader;
  echo "cores $JOBS"; uptime; python3 -c "import metalcall; print('metalcall', metalcall.__version__, metalcall.backends())"; } \
  > "$D/machine.txt" 2>&1
W="$(mktemp -d)"
export METALCALL_CACHE_DIR="$W/cache"  # an empty kernel cache: every library is compiled
t0=$(date +%s)
timeout $((SECONDS_CAP + 90)) python3 -m tools.msl_fuzz campaign --out "$W/c" --programs "$PROGRAMS" \
  --devices "$DEVICES" --jobs "$JOBS" --chunk 100 --batch 50 --seed "$SEED" --time-limit "$SECONDS_CAP" \
  --constants-every 4 --shrink 0 > "$D/campaign.log" 2>&1
echo "rc $? in $(( $(date +%s) - t0 )) s (cap $SECONDS_CAP s + 90)" >> "$D/campaign.log"
python3 - "$W/c" "$D" <<'PY'
import json, shutil, sys
from pathlib import Path
src, dst = Path(sys.argv[1]), Path(sys.argv[2])
if (src / "summary.json").exists():
    s = json.loads((src / "summary.json").read_text())
    s["findings_total"] = len(s["findings"])
    s["findings"] = s["findings"][:300]
    (dst / "summary.json").write_text(json.dumps(s, indent=1))
    print(json.dumps({k: s[k] for k in ("programs", "results", "failures", "seconds", "seconds_per_program")}, indent=1))
for folder in sorted((src / "findings").glob("*")):
    for f in sorted(folder.glob("*.metal"))[:100]:
        (dst / "findings" / folder.name).mkdir(parents=True, exist_ok=True)
        shutil.copy(f, dst / "findings" / folder.name / f.name)
PY
tail -n 5 "$D/campaign.log"
rm -rf "$W"
