#!/usr/bin/env bash
# Runs every C++-level check from one command: configures cpp/tests (a CTest project whose
# tests are the prelude, fiber, worker pool, object check, api and Metal checks), then
# `ctest --output-on-failure`.
# Arguments go to ctest, e.g.  cpp/tests/run.sh -LE metal   (all but the Metal check)
#                              cpp/tests/run.sh -R fiber    (the fiber test only)
# Environment: CPP_TESTS_BUILD_DIR keeps the build folder there (default: a temporary one,
# removed afterwards). Exits non-zero if any test fails. Needs cmake and bash; each check
# states what else it needs (g++ or clang++; clang-16 and pip for the Metal check).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ -n "${CPP_TESTS_BUILD_DIR:-}" ]]; then
  build="$CPP_TESTS_BUILD_DIR"
else
  build="$(mktemp -d "${TMPDIR:-/tmp}/metalcall-cpp-tests.XXXXXX")"
  trap 'rm -rf "$build"' EXIT
fi

# The project builds nothing itself (each check compiles what it tests), so configuring is all
# the build there is; Ninja when present, as on CI, where make may be missing.
generator=()
if [[ -z "${CMAKE_GENERATOR:-}" ]] && command -v ninja >/dev/null 2>&1; then
  generator=(-G Ninja)
fi
mkdir -p "$build"
cmake -S "$here" -B "$build" ${generator[@]+"${generator[@]}"} >"$build/configure.log" 2>&1 \
  || { cat "$build/configure.log"; exit 1; }
cd "$build"
ctest --output-on-failure "$@"
