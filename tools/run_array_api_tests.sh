#!/usr/bin/env bash
# Runs the data-apis array-api-tests suite (a checkout outside this project) against metalcall.numpy,
# with the exclusions docs/array-api-tests.md explains. By hand only: .ci/run does not call it.
#
#   tools/run_array_api_tests.sh PATH/TO/array-api-tests [extra pytest arguments...]
#
# Environment: METALCALL_DEVICE (cpu, cuda, cuda:1, metal; empty: metalcall's best device) picks
# mnp's default device; MAX_EXAMPLES (default 100) is Hypothesis' examples per test. Run it with the
# Python that has metalcall installed plus the suite's requirements (pytest, hypothesis, ndindex).
set -euo pipefail

if [ $# -lt 1 ] || [ ! -d "$1/array_api_tests" ]; then
  echo "usage: $0 PATH/TO/array-api-tests [pytest arguments...]" >&2
  exit 2
fi
suite=$(cd "$1" && pwd)
shift

export ARRAY_API_TESTS_MODULE=metalcall.numpy
export ARRAY_API_TESTS_SKIP_DTYPES=complex64,complex128
python=${PYTHON:-python3}

# metalcall.numpy has no complex dtypes; the suite computes its widest complex dtype with max() over an
# empty list and fails at import unless dtype_helpers.py is patched (docs/array-api-tests.md shows how).
if ! (cd "$suite" && "$python" -c "import array_api_tests.dtype_helpers" 2>/dev/null); then
  (cd "$suite" && "$python" -c "import array_api_tests.dtype_helpers" 2>&1 | tail -n 1) >&2 || true
  echo "$0: the suite does not import with metalcall.numpy; without complex dtypes" \
       "$suite/array_api_tests/dtype_helpers.py needs the one-line patch in docs/array-api-tests.md" >&2
  exit 2
fi

# Skips (tests of what metalcall.numpy does not implement), written outside both trees: the complex
# special cases (their ids name real(x_i)/imag(x_i)) and the names of the linalg and fft extensions
# (test_has_names has no extension marker, so --disable-extension does not reach it).
skips=$(mktemp "${TMPDIR:-/tmp}/mnp-array-api-skips.XXXXXX")
trap 'rm -f "$skips"' EXIT
cd "$suite"
"$python" -m pytest array_api_tests --collect-only -q -p no:cacheprovider 2>/dev/null |
  grep -E '^array_api_tests/' |
  grep -E 'test_special_cases\.py::.*(real\(x[12]?_i\)|imag\(x[12]?_i\))|test_has_names\[(linalg|fft)-' \
    > "$skips" || true
echo "skipping $(wc -l < "$skips") tests of complex dtypes and of the linalg/fft extensions" >&2

"$python" -m pytest array_api_tests -p no:cacheprovider -q -rfE \
  --max-examples "${MAX_EXAMPLES:-100}" --disable-deadline \
  --disable-extension linalg fft \
  --skips-file "$skips" "$@"
