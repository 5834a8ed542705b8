#!/usr/bin/env bash
# Builds and runs the FiberGroup tests standalone (no CMake needed):
#   g++ -O2, clang++ -O2 (if installed), g++ -O2 -fsanitize=address,
#   and, if aarch64-linux-gnu-g++ and qemu-aarch64 are installed, the arm64
#   build under qemu-user. Exits non-zero if any build or test fails.
# Build folder: $FIBER_BUILD_DIR (default /tmp/fiber-work).
set -u
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
src="$root/cpp/src/backends/cpu"
out="${FIBER_BUILD_DIR:-/tmp/fiber-work}"
mkdir -p "$out"
sources=("$here/fiber_test.cpp" "$src/fiber.cpp" "$src/fiber_switch_x86_64.S" "$src/fiber_switch_arm64.S")
flags=(-std=c++17 -O2 -g -Wall -Wextra -I"$src" -pthread)
status=0

build_and_run() {  # name compiler [extra flags...] ; runner from $runner
  local name="$1" cxx="$2"; shift 2
  echo "== $name: $cxx $*"
  if ! "$cxx" "${flags[@]}" "$@" "${sources[@]}" -o "$out/fiber_test_$name"; then
    echo "== $name: BUILD FAILED"; status=1; return
  fi
  if ! ${runner:-} "$out/fiber_test_$name"; then
    echo "== $name: TESTS FAILED"; status=1
  fi
}

runner= build_and_run gcc g++
if command -v clang++ >/dev/null; then
  runner= build_and_run clang clang++
fi
runner= build_and_run gcc_asan g++ -fsanitize=address -fno-omit-frame-pointer
if command -v aarch64-linux-gnu-g++ >/dev/null; then
  if command -v qemu-aarch64 >/dev/null; then
    runner="qemu-aarch64 -L /usr/aarch64-linux-gnu" build_and_run arm64 aarch64-linux-gnu-g++
  else
    echo "== arm64: no qemu-aarch64, assembling only"
    aarch64-linux-gnu-g++ -c "$src/fiber_switch_arm64.S" -o "$out/fiber_switch_arm64.o" || status=1
  fi
else
  echo "== arm64: skipped (no aarch64-linux-gnu-g++)"
fi
[ $status = 0 ] && echo "== all fiber test builds passed" || echo "== SOME FIBER TEST BUILDS FAILED"
exit $status
