#!/usr/bin/env bash
# The prelude's name table (msl/analysis/prelude_names_table.hpp) for builds outside CMake
# (cpp/tests/translate/run.sh, tools/metal_check/check.py): what msl/analysis/stdlib_names.cmake
# does at build time, with $CXX (default g++).
#   prelude_names.sh TEXTS.cpp OUT.cpp   (TEXTS.cpp: the prelude's text, msl_prelude_texts.cpp)
set -eu
[ $# -eq 2 ] || { echo "usage: $0 TEXTS.cpp OUT.cpp" >&2; exit 2; }
here="$(cd "$(dirname "$0")" && pwd)"
src="$here/../src"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"${CXX:-g++}" -std=c++17 -O1 -I"$src" -I"$here/../include" -o "$work/prelude_names" \
  "$here/prelude_names_main.cpp" "$src/msl/analysis/prelude_scan.cpp" "$src/msl/analysis/call_graph.cpp" \
  "$src/msl/lex/lexer.cpp" "$src/msl/lex/line_splices.cpp" "$src/msl/errors/source_errors.cpp" \
  "$src/msl/errors/front_end_stop.cpp" \
  "$src/msl/parse/type_names.cpp" "$1"
"$work/prelude_names" "$2"
