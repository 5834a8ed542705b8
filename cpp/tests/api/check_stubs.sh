#!/usr/bin/env bash
# Checks the typed stubs (python/metalcall/_core.pyi) against the built extension:
#   1. builds and installs metalcall into a private venv (scikit-build-core, no isolation),
#   2. mypy --strict on cpp/tests/api/stub_sample.py (a program using the whole API),
#   3. python -m mypy.stubtest metalcall._core (no missing or mismatched names),
#   4. runs stub_sample.py, so the types it was checked with are also the real ones.
# Usage: cpp/tests/api/check_stubs.sh   Environment: PYTHON (default python3), which needs
# scikit-build-core, pybind11 and numpy installed; mypy is installed into the venv if missing.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
python="${PYTHON:-python3}"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/metalcall-stubs.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

"$python" -m venv --system-site-packages "$tmp/venv"
py="$tmp/venv/bin/python"
"$py" -c "import mypy" 2>/dev/null || "$py" -m pip install -q mypy
"$py" -m pip install -q --no-build-isolation --config-settings=build-dir="$tmp/build" "$repo"

cd "$tmp"  # import the installed package, not the source tree
echo "== mypy --strict stub_sample.py"
"$py" -m mypy --strict --no-incremental "$repo/cpp/tests/api/stub_sample.py"
echo "== stubtest metalcall._core"
"$py" -m mypy.stubtest metalcall._core
echo "== run stub_sample.py"
METALCALL_CACHE_DIR="$tmp/cache" "$py" "$repo/cpp/tests/api/stub_sample.py"
