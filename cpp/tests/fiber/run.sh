#!/usr/bin/env bash
# Builds and runs the FiberGroup tests standalone (no CMake needed):
#   g++ -O2; clang++ -O2 (if installed); g++ and clang++ with AddressSanitizer
#   (clang also UBSan), once more with ASan's fake stacks on; and, if
#   aarch64-linux-gnu-g++ and qemu-aarch64 are installed, the arm64 build under
#   qemu-user, plain and with PAC return-address signing. Also checks that
#   benchmarks/cpp/fiber_barrier.cpp builds. Exits non-zero if anything fails.
# Build folder: $FIBER_BUILD_DIR (default /tmp/fiber-work).
set -u
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
src="$root/cpp/src/backends/cpu"
out="${FIBER_BUILD_DIR:-/tmp/fiber-work}"
mkdir -p "$out"
# Both .S files on every target: each assembles to nothing off its own arch.
lib=("$src/fiber.cpp" "$src/fiber_switch_x86_64.S" "$src/fiber_switch_arm64.S")
flags=(-std=c++17 -O2 -g -Wall -Wextra -Werror -I"$src" -pthread)
status=0

build_and_run() {  # name compiler [flags...]; runs under $runner, env $run_env
  local name="$1" cxx="$2"; shift 2
  echo "== $name: $cxx $*"
  if ! "$cxx" "${flags[@]}" "$@" "$here/fiber_test.cpp" "${lib[@]}" -o "$out/fiber_test_$name"; then
    echo "== $name: BUILD FAILED"; status=1; return
  fi
  if ! env ${run_env:-} ${runner:-} "$out/fiber_test_$name"; then
    echo "== $name: TESTS FAILED"; status=1
  fi
}

build_and_run gcc g++
if command -v clang++ >/dev/null; then build_and_run clang clang++; fi
build_and_run gcc_asan g++ -fsanitize=address -fno-omit-frame-pointer
run_env=ASAN_OPTIONS=detect_stack_use_after_return=1 \
  build_and_run gcc_asan_fakestack g++ -fsanitize=address -fno-omit-frame-pointer
if command -v clang++ >/dev/null; then
  build_and_run clang_asan_ubsan clang++ -fsanitize=address,undefined -fno-omit-frame-pointer
fi

if command -v aarch64-linux-gnu-g++ >/dev/null && command -v qemu-aarch64 >/dev/null; then
  runner="qemu-aarch64 -L /usr/aarch64-linux-gnu" build_and_run arm64 aarch64-linux-gnu-g++
  # -cpu max emulates pointer authentication, so pac-ret really signs lr.
  runner="qemu-aarch64 -cpu max -L /usr/aarch64-linux-gnu" \
    build_and_run arm64_pac aarch64-linux-gnu-g++ -mbranch-protection=standard
elif command -v aarch64-linux-gnu-gcc >/dev/null; then
  echo "== arm64: no qemu-aarch64, assembling only"
  aarch64-linux-gnu-gcc -c "$src/fiber_switch_arm64.S" -o "$out/fiber_switch_arm64.o" || status=1
else
  echo "== arm64: skipped (no aarch64-linux-gnu-g++)"
fi

echo "== benchmark builds"
g++ "${flags[@]}" "$root/benchmarks/cpp/fiber_barrier.cpp" "${lib[@]}" -o "$out/fiber_barrier" \
  || { echo "== benchmark: BUILD FAILED"; status=1; }

if [ $status = 0 ]; then echo "== all fiber test builds passed"; else echo "== SOME FIBER TEST BUILDS FAILED"; fi
exit $status
