#!/usr/bin/env bash
# The wheel as users get it: `pip wheel .`, installed into a fresh virtual
# environment (not the checkout), runs the test suite; `auditwheel show` reports the
# manylinux tag the wheel qualifies for (Linux, when auditwheel installs).
#   WHEEL_CHECK_DIR=/path   keep the wheel and the venv there (default: a temp folder)
#   WHEEL_CHECK_TESTS="a.py b/"  run only these paths under tests/ (default: the whole suite)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="${WHEEL_CHECK_DIR:-$(mktemp -d)}"
mkdir -p "$work"
python3 -m pip wheel "$repo" --no-deps --wheel-dir "$work/dist" -q
wheel="$(ls "$work"/dist/metalcall-*.whl)"
echo "wheel check: built $(basename "$wheel")"
rm -rf "$work/venv"
python3 -m venv "$work/venv"
# shellcheck disable=SC1091
. "$work/venv/bin/activate"
python -m pip install -q --upgrade pip
python -m pip install -q "$wheel[test]"
if [ "$(uname -s)" = Linux ] && python -m pip install -q auditwheel 2>/dev/null; then
  auditwheel show "$wheel" | tr '\n' ' ' | sed 's/  */ /g'; echo
fi
# From outside the checkout, so that the installed package is what the tests import.
cd "$work"
python -c "import metalcall, sys; assert '$repo' not in metalcall.__file__, metalcall.__file__; print('wheel check: testing', metalcall.__file__)"
targets=("$repo/tests")
if [ -n "${WHEEL_CHECK_TESTS:-}" ]; then
  targets=()
  for t in $WHEEL_CHECK_TESTS; do targets+=("$repo/tests/$t"); done
fi
python -m pytest "${targets[@]}" -q -x -p no:cacheprovider
echo "wheel check: ok"
