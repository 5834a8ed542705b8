#!/usr/bin/env bash
# Builds translate_main (an MSL file's CPU or CUDA translation: the MSL front end, core's
# reflection names and the prelude's name table, with g++ or $CXX) and checks the CUDA rewrites of
# conditionals (check_translations.py), which kernels run as fibers
# (check_sync_reachability.py) and which get CUDA's coarsened entry point
# (check_coarsened_entries.py) and which prelude parts CUDA translations get (check_prelude_parts.py);
# with NVRTC (tools/nvrtc_check.py) it also compiles them, else
# says why it skips that part. Build folder: $TRANSLATE_BUILD_DIR (default
# /tmp/translate-main-work); rebuilt only where a source is newer. Exits non-zero on failure.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
out="${TRANSLATE_BUILD_DIR:-/tmp/translate-main-work}"
cxx="${CXX:-g++}"
mkdir -p "$out/obj" "$out/texts"
# The prelude's text as the library embeds it (msl/analysis/stdlib_names.cmake, run by a configure).
printf 'cmake_minimum_required(VERSION 3.18)\nproject(texts LANGUAGES NONE)\ninclude("%s/cpp/src/msl/analysis/stdlib_names.cmake")\n' \
  "$repo" > "$out/texts/CMakeLists.txt"
cmake -S "$out/texts" -B "$out/texts/build" > "$out/texts/configure.log" 2>&1 ||
  { cat "$out/texts/configure.log"; echo "FAIL: could not generate the prelude's text"; exit 1; }
sources=("$repo"/cpp/src/msl/*/*.cpp "$repo/cpp/src/core/reflection.cpp" "$here/translate_main.cpp"
         # --constant: function-constant literals as the translated backends write them
         "$repo/cpp/src/backends/translated/constant_literals.cpp" "$repo/cpp/src/core/scalar_packing.cpp"
         "$repo/cpp/src/core/constant_components.cpp")
newest_header="$(ls -t "$repo"/cpp/src/msl/*/*.hpp "$repo"/cpp/include/metalcall/*.hpp | head -1)"
stale=()
for s in "${sources[@]}"; do
  o="$out/obj/$(basename "$s" .cpp).o"
  if [ ! -f "$o" ] || [ "$s" -nt "$o" ] || [ "$newest_header" -nt "$o" ]; then stale+=("$s"); fi
done
if [ ${#stale[@]} -gt 0 ]; then
  echo "== building translate_main (${#stale[@]} sources, $cxx)"
  printf '%s\n' "${stale[@]}" | xargs -P2 -I{} sh -c \
    '"$0" -std=c++17 -O1 -c -I"$1/cpp/src" -I"$1/cpp/include" "{}" -o "$2/obj/$(basename "{}" .cpp).o"' \
    "$cxx" "$repo" "$out" || { echo "FAIL: build"; exit 1; }
fi
# The prelude's name table, as msl/analysis/stdlib_names.cmake makes it at build time.
mkdir -p "$out/names"
CXX="$cxx" "$repo/cpp/build_tools/prelude_names.sh" "$out/texts/build/generated/msl_prelude_texts.cpp" \
  "$out/names/msl_prelude_names.cpp" &&
  "$cxx" -std=c++17 -O1 -c -I"$repo/cpp/src" "$out/names/msl_prelude_names.cpp" -o "$out/names/msl_prelude_names.o" ||
  { echo "FAIL: the prelude's name table"; exit 1; }
"$cxx" "$out"/obj/*.o "$out/names/msl_prelude_names.o" -o "$out/translate_main" || { echo "FAIL: link"; exit 1; }
status=0
python3 "$here/check_translations.py" "$out/translate_main" || status=1
python3 "$here/check_sync_reachability.py" "$out/translate_main" || status=1
python3 "$here/check_coarsened_entries.py" "$out/translate_main" || status=1
python3 "$here/check_prelude_parts.py" "$out/translate_main" || status=1
exit $status
