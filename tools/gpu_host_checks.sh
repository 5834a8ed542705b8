#!/usr/bin/env bash
# The checks CI cannot run (it has no GPU), for a Linux host with an NVIDIA GPU and NVRTC, from the
# repository root with the build tools installed (pybind11, scikit-build-core, cmake, ninja):
#
#   OUT=/some/folder bash tools/gpu_host_checks.sh [suite] [soak] [fuzz]
#
# suite: the tests that run on CUDA (`-k "cuda or gpu"`, not the slow ones; pytest-xdist if there),
#        verbose, so that every failure is named even when the time cap cuts the run;
# soak:  tests/reliability/test_exit_soak.py on CUDA, METALCALL_EXIT_SOAK runs (default 200);
# fuzz:  the differential fuzzer's campaign on cpu and cuda (FUZZ_PROGRAMS, default 4000; FUZZ_SEED).
# With no part named, all three. Logs go to $OUT (default ./gpu-checks); each part has a cap
# (SUITE_CAP, SOAK_CAP, FUZZ_CAP seconds) so one slow part cannot eat the others. Set CXX if the
# host's default C++ compiler builds a broken extension (it did on one lent machine: /usr/bin/g++).
set -u
OUT="${OUT:-gpu-checks}"
mkdir -p "$OUT"
parts="${*:-suite soak fuzz}"
T0=$(date +%s)
elapsed() { echo $(( $(date +%s) - T0 )); }

{ date -u; git log -1 --format='%h %s' 2>/dev/null; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1; } \
  > "$OUT/machine.txt"
SKBUILD_CMAKE_DEFINE="${SKBUILD_CMAKE_DEFINE:-CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF}" \
  python -m pip install -q --no-build-isolation --config-settings=build-dir=/tmp/metalcall-gpu-build . \
  > "$OUT/build.log" 2>&1 || { echo "build failed"; tail -30 "$OUT/build.log"; exit 1; }
echo "built in $(elapsed) s"
python - <<'PY' | tee -a "$OUT/machine.txt"
import metalcall as mc
dev = mc.Device("cuda")
dev.compile("kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) { a[i] = 1; }")
print(dev.name, "| NVRTC loaded:", sorted({l.split()[-1] for l in open("/proc/self/maps") if "nvrtc" in l}))
PY

workers=""
python -c "import xdist" 2>/dev/null && workers="-n $(nproc) -p no:benchmark"
for part in $parts; do
  case "$part" in
    suite)
      timeout "${SUITE_CAP:-400}" python -m pytest tests -k "cuda or gpu" -m "not slow" $workers --timeout 100 -v -rfE \
        > "$OUT/suite.log" 2>&1
      echo "suite rc $? at $(elapsed) s"
      grep -E "^(FAILED|ERROR) |[0-9]+ (passed|failed)" "$OUT/suite.log" | tail -25 ;;
    soak)
      METALCALL_EXIT_SOAK="${METALCALL_EXIT_SOAK:-200}" timeout "${SOAK_CAP:-300}" \
        python -m pytest -q tests/reliability/test_exit_soak.py -k cuda -p no:cacheprovider > "$OUT/soak.log" 2>&1
      echo "soak rc $? at $(elapsed) s"; tail -3 "$OUT/soak.log" ;;
    fuzz)
      timeout "${FUZZ_CAP:-400}" python -m tools.msl_fuzz campaign --out "$OUT/fuzz" --devices cpu,cuda \
        --programs "${FUZZ_PROGRAMS:-4000}" --seed "${FUZZ_SEED:-9100}" --jobs "$(nproc)" --shrink 0 --constants-every 4 \
        --time-limit $(( ${FUZZ_CAP:-400} - 60 )) > "$OUT/fuzz.log" 2>&1
      echo "fuzz rc $? at $(elapsed) s"; tail -5 "$OUT/fuzz.log" ;;
    *) echo "unknown part '$part': the parts are suite, soak and fuzz"; exit 2 ;;
  esac
done
