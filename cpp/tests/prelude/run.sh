#!/usr/bin/env bash
# Builds and runs the MSL prelude tests with g++ and every clang++ found
# (or the compilers named in PRELUDE_CXX), at -O2 and -O0, with
# -Wall -Wextra -Werror. Also checks that invalid MSL is rejected (fail/*.cpp)
# and prints the compile time of a small translated kernel. Then runs
# nvrtc_check.py (NVRTC + GPU, skipped when absent). Exits non-zero on any failure.
# To build one test by hand, mirror the translator's output: the CPU ABI
# (msl/targets/cpu_abi.hpp's METALCALL_CPU_ABI_TEXT), then the prelude.
set -u
here=$(cd "$(dirname "$0")" && pwd)
prelude=$(cd "$here/../../src/msl/prelude" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/metalcall-prelude.XXXXXX")
trap 'rm -rf "$work"' EXIT

if [ -n "${PRELUDE_CXX:-}" ]; then
  compilers=$PRELUDE_CXX
else
  compilers=""
  seen=""
  for c in g++ clang++ clang++-14 clang++-15 clang++-16 clang++-17 clang++-18 clang++-19 clang++-20; do
    path=$(command -v "$c" 2>/dev/null) || continue
    real=$(readlink -f "$path")
    case " $seen " in *" $real "*) continue ;; esac
    seen="$seen $real"
    compilers="$compilers $c"
  done
fi
[ -n "$compilers" ] || { echo "no C++ compiler found: install g++ or clang++, or set PRELUDE_CXX"; exit 1; }

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Generated CPU kernels start with the runtime ABI (msl/targets/cpu_abi.hpp), then
# include the prelude; every compile below gets the same prefix via -include.
first=${compilers%% *}; first=${first:-g++}
prefix="$work/cpu_abi_prefix.h"
cat >"$work/print_abi.cpp" <<'CPP'
#include "msl/targets/cpu_abi.hpp"
#include <cstdio>
int main() { std::printf("extern \"C\" {\n%s\n}\n", METALCALL_CPU_ABI_TEXT); }
CPP
if "$first" -std=c++17 -I"$here/../../src" "$work/print_abi.cpp" -o "$work/print_abi" 2>/dev/null; then
  "$work/print_abi" >"$prefix"
else
  echo "note: no msl/targets/cpu_abi.hpp; compiling without the ABI prefix"
  : >"$prefix"
fi

for cxx in $compilers; do
  echo "== $cxx ($("$cxx" -dumpversion))"
  for opt in -O2 -O0; do
    for src in "$here"/test_*.cpp; do
      name=$(basename "$src" .cpp)
      exe="$work/$name-$(basename "$cxx")$opt"
      if ! "$cxx" -std=c++17 $opt -Wall -Wextra -Werror -include "$prefix" -I"$prelude" -I"$here" "$src" -o "$exe" 2>"$exe.log"; then
        cat "$exe.log"; fail "$cxx $opt: $name does not compile"; continue
      fi
      if out=$("$exe"); then
        [ "$opt" = -O2 ] && echo "  $out"
      else
        echo "$out"; fail "$cxx $opt: $name"
      fi
    done
  done
  # Invalid MSL must be rejected, with the expected diagnostic.
  for src in "$here"/fail/*.cpp; do
    expect=$(sed -n '1s|^// expect: ||p' "$src")
    if "$cxx" -std=c++17 -fsyntax-only -include "$prefix" -I"$prelude" "$src" >"$work/fail.log" 2>&1; then
      fail "$cxx: $(basename "$src") compiled but must not"
    elif ! grep -Eq -- "$expect" "$work/fail.log"; then
      fail "$cxx: $(basename "$src") failed without the expected message /$expect/"
    fi
  done
  echo "  fail/*.cpp rejected as expected"
  # Compile-time budget of a translated kernel (best of 3).
  best=""
  for _ in 1 2 3; do
    t0=$(date +%s%N)
    "$cxx" -std=c++17 -O2 -shared -fPIC -include "$prefix" -I"$prelude" "$here/kernel_float4.cpp" -o "$work/kernel.so" || { fail "$cxx: kernel_float4.cpp"; break; }
    t=$(( ($(date +%s%N) - t0) / 1000000 ))
    if [ -z "$best" ] || [ "$t" -lt "$best" ]; then best=$t; fi
  done
  echo "  kernel_float4.cpp: -O2 -shared -fPIC in ${best} ms"
done

# The GPU half of the cross-backend check (skips without NVRTC and a GPU).
if command -v python3 >/dev/null; then
  echo "== NVRTC"
  python3 "$here/nvrtc_check.py" | sed 's/^/  /'
  [ "${PIPESTATUS[0]}" -eq 0 ] || fail "nvrtc_check.py"
fi

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all prelude tests passed"
