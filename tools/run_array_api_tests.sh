#!/usr/bin/env bash
# Runs the data-apis array-api-tests suite (a checkout outside this project, with its array-api
# submodule) against metalcall.numpy: the whole suite, no skips file, every extension, at the array
# API version metalcall.numpy reports (docs/array-api-tests.md). By hand only: .ci/run does not call it.
#
#   tools/run_array_api_tests.sh PATH/TO/array-api-tests [extra pytest arguments...]
#   tools/run_array_api_tests.sh PATH/TO/array-api-tests array_api_tests/test_fft.py -x   # some files only
#
# Environment: METALCALL_DEVICE (cpu, cuda, cuda:1, metal; empty: metalcall's best device) picks
# mnp's default device; MAX_EXAMPLES (default 20) is Hypothesis' examples per test;
# ARRAY_API_TESTS_VERSION (default 2025.12) the standard's version; MODULE (default
# metalcall.numpy) the namespace under test, so array_api_strict or numpy run on the same settings.
# Run it with the Python that has metalcall installed plus the suite's requirements (pytest,
# hypothesis, ndindex, pytest-json-report).
set -euo pipefail

if [ $# -lt 1 ] || [ ! -d "$1/array_api_tests" ]; then
  echo "usage: $0 PATH/TO/array-api-tests [pytest arguments...]" >&2
  exit 2
fi
suite=$(cd "$1" && pwd)
shift

export ARRAY_API_TESTS_MODULE=${MODULE:-metalcall.numpy}
export ARRAY_API_TESTS_VERSION=${ARRAY_API_TESTS_VERSION:-2025.12}
python=${PYTHON:-python3}

if [ ! -d "$suite/array-api/src" ]; then
  echo "$0: $suite/array-api is empty: the special-case tests read the standard from that submodule" \
       "(git -C $suite submodule update --init)" >&2
  exit 2
fi

# The whole suite unless the arguments name its files or tests (array_api_tests/test_fft.py, ...).
targets=(array_api_tests)
if [ $# -gt 0 ] && [[ "$1" == array_api_tests* ]]; then targets=(); fi

cd "$suite"
"$python" -m pytest "${targets[@]}" -p no:cacheprovider -q -rfE \
  --max-examples "${MAX_EXAMPLES:-20}" --disable-deadline "$@"
