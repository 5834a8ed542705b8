#!/usr/bin/env bash
# What each prelude part declares (backends/translated/prelude_part_tables.hpp), for builds
# outside CMake (tools/cuda_prelude_parts_check.py): what backends/translated/translated.cmake
# does at build time, with $CXX (default g++).
#   prelude_part_tables.sh EMBEDDED.cpp OUT.cpp   (EMBEDDED.cpp: the headers, embedded_prelude.cpp)
set -eu
[ $# -eq 2 ] || { echo "usage: $0 EMBEDDED.cpp OUT.cpp" >&2; exit 2; }
here="$(cd "$(dirname "$0")" && pwd)"
src="$here/../src"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"${CXX:-g++}" -std=c++17 -O1 -I"$src" -o "$work/prelude_part_tables" "$here/prelude_part_tables_main.cpp" \
  "$src/backends/translated/prelude_parts_scan.cpp" "$src/backends/translated/prelude_words.cpp" "$1"
"$work/prelude_part_tables" "$2"
