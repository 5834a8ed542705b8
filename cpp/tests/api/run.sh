#!/usr/bin/env bash
# Checks metalcall's installable C++ package end to end:
#   1. configures and builds the library without Python (-DMETALCALL_PYTHON=OFF),
#   2. installs it to a staging prefix, then moves the prefix (the package must be relocatable),
#   3. checks each installed public header compiles on its own (nothing from cpp/src),
#   4. builds cpp/examples and cpp/tests/api against the package with find_package(metalcall),
#   5. runs both.
# Exits non-zero on any failure. Usage: cpp/tests/api/run.sh [--static]
#   --static   build a static libmetalcall (METALCALL_SHARED=OFF) instead of the shared one
# Environment: CMAKE_GENERATOR (default Ninja if found), JOBS (default 2),
#   METALCALL_API_TEST_KEEP=1 keeps the temporary directory,
#   API_TEST_LIBRARY_BUILD_DIR builds the library there (removed afterwards unless kept): .ci/run
#   gives it the depth of the wheel's build folder, build/<tag>, so that ccache serves the wheel's
#   compiles of the same sources from this build's.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
shared=ON
for arg in "$@"; do
  case "$arg" in
    --static) shared=OFF ;;
    *) echo "usage: $0 [--static]" >&2; exit 2 ;;
  esac
done

jobs="${JOBS:-2}"
generator=()  # expanded as ${generator[@]+...}: bash 3.2 (macOS) treats an empty array as unset under set -u
if [[ -z "${CMAKE_GENERATOR:-}" ]] && command -v ninja >/dev/null 2>&1; then
  generator=(-G Ninja)
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/metalcall-api.XXXXXX")"
libbuild="${API_TEST_LIBRARY_BUILD_DIR:-$tmp/build}"
if [[ "${METALCALL_API_TEST_KEEP:-0}" == 1 ]]; then
  echo "keeping $tmp and $libbuild"
else
  trap 'rm -rf "$tmp" "$libbuild"' EXIT
fi

step() { printf '\n== %s\n' "$*"; }
start=$SECONDS

step "configure and build libmetalcall (METALCALL_PYTHON=OFF, METALCALL_SHARED=$shared)"
cmake -S "$repo" -B "$libbuild" ${generator[@]+"${generator[@]}"} -DCMAKE_BUILD_TYPE=Release \
  -DMETALCALL_PYTHON=OFF -DMETALCALL_SHARED="$shared" >"$tmp/configure.log" \
  || { cat "$tmp/configure.log"; exit 1; }
cmake --build "$libbuild" -j "$jobs"

step "install, then move the prefix"
cmake --install "$libbuild" --prefix "$tmp/stage" >"$tmp/install.log" || { cat "$tmp/install.log"; exit 1; }
mv "$tmp/stage" "$tmp/prefix"
prefix="$tmp/prefix"
(cd "$prefix" && find . -type f -o -type l | sort | sed 's/^/  /')
for f in include/metalcall/metalcall.hpp include/metalcall/version.hpp; do
  [[ -f "$prefix/$f" ]] || { echo "missing $f in the installed package" >&2; exit 1; }
done
config="$(find "$prefix" -name metalcallConfig.cmake)"
[[ -n "$config" ]] || { echo "metalcallConfig.cmake was not installed" >&2; exit 1; }
if grep -rnF -e "$repo" -e "$tmp/stage" -e "$libbuild" "$(dirname "$config")"; then
  echo "the CMake package names build or source paths: it is not relocatable" >&2
  exit 1
fi

step "public headers are self-contained and include nothing private"
if grep -rnE '#include +"(core|msl|backends)/' "$prefix/include"; then
  echo "an installed header includes a private header from cpp/src" >&2
  exit 1
fi
cxx="${CXX:-c++}"
for h in "$prefix"/include/metalcall/*.hpp; do
  echo "#include <metalcall/$(basename "$h")>" | "$cxx" -std=c++17 -fsyntax-only -Wall -Wextra -Werror \
    -I"$prefix/include" -x c++ - || { echo "$h does not compile on its own" >&2; exit 1; }
done
echo "  $(ls "$prefix"/include/metalcall/*.hpp | wc -l) headers ok"

step "build cpp/examples and cpp/tests/api with find_package(metalcall)"
for project in examples tests/api; do
  name="${project//\//_}"
  cmake -S "$repo/cpp/$project" -B "$tmp/$name" ${generator[@]+"${generator[@]}"} -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/$name.log" || { cat "$tmp/$name.log"; exit 1; }
  cmake --build "$tmp/$name" -j "$jobs"
done

# A private kernel cache: the run neither reads nor fills the user's.
export METALCALL_CACHE_DIR="$tmp/cache"
unset METALCALL_DEVICE

step "run hello"
"$tmp/examples/hello"

step "run api_test"
"$tmp/tests_api/api_test"

step "ok in $((SECONDS - start)) s"
