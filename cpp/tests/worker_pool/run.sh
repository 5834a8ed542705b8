#!/usr/bin/env bash
# Builds and runs the WorkerPool stress test standalone (no CMake needed): g++ -O2,
# then with ThreadSanitizer and with AddressSanitizer + UBSan (each skipped where the
# toolchain lacks its runtime). Exits non-zero if anything fails.
# Build folder: $POOL_BUILD_DIR (default /tmp/worker-pool-work).
set -u
here="$(cd "$(dirname "$0")" && pwd)"
src="$(cd "$here/../../src" && pwd)"
out="${POOL_BUILD_DIR:-/tmp/worker-pool-work}"
mkdir -p "$out"
flags=(-std=c++17 -O2 -g -Wall -Wextra -Werror -I"$src" -I"$src/../include" -pthread)
status=0
for variant in plain tsan asan; do
  extra=()
  [ "$variant" = tsan ] && extra=(-fsanitize=thread)
  [ "$variant" = asan ] && extra=(-fsanitize=address,undefined)
  echo "== $variant"
  if [ ${#extra[@]} -gt 0 ] &&
     ! echo 'int main() { return 0; }' | g++ -x c++ "${extra[@]}" - -o "$out/probe_$variant" 2>/dev/null; then
    echo "== $variant: skipped (g++ cannot link ${extra[*]} here)"; continue
  fi
  if ! g++ "${flags[@]}" "${extra[@]}" "$here/pool_test.cpp" "$src/backends/cpu/worker_pool.cpp" "$src/backends/cpu/wait_word.cpp" \
       "$src/backends/cpu/fork_guard.cpp" "$src/core/interrupt.cpp" \
       -o "$out/pool_test_$variant"; then
    echo "== $variant: BUILD FAILED"; status=1; continue
  fi
  if ! "$out/pool_test_$variant"; then echo "== $variant: TESTS FAILED"; status=1; fi
done
exit $status
