#!/usr/bin/env bash
# Builds and runs the WorkerPool stress test standalone (no CMake needed): g++ -O2,
# then with ThreadSanitizer and with AddressSanitizer. Exits non-zero if anything fails.
# Build folder: $POOL_BUILD_DIR (default /tmp/worker-pool-work).
set -u
here="$(cd "$(dirname "$0")" && pwd)"
src="$(cd "$here/../../src/backends/cpu" && pwd)"
out="${POOL_BUILD_DIR:-/tmp/worker-pool-work}"
mkdir -p "$out"
flags=(-std=c++17 -O2 -g -Wall -Wextra -Werror -I"$src/../.." -pthread)
status=0
for variant in plain tsan asan; do
  extra=()
  [ "$variant" = tsan ] && extra=(-fsanitize=thread)
  [ "$variant" = asan ] && extra=(-fsanitize=address,undefined)
  echo "== $variant"
  if ! g++ "${flags[@]}" "${extra[@]}" "$here/pool_test.cpp" "$src/worker_pool.cpp" -o "$out/pool_test_$variant"; then
    echo "== $variant: BUILD FAILED"; status=1; continue
  fi
  if ! "$out/pool_test_$variant"; then echo "== $variant: TESTS FAILED"; status=1; fi
done
exit $status
