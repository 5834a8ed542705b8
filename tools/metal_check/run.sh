#!/usr/bin/env bash
# Checks the Metal backend without a Mac (docs/metal-backend.md): compiles every .mm of
# cpp/src/backends/metal as ARC Objective-C++ against declarations generated from the
# pyobjc-framework-Metal metadata, runs the backend's logic tests, and proves with
# negative tests that the check catches mistakes. Exits non-zero on any problem.
#   METAL_CHECK_CLANG=clang++-17   another clang
#   METAL_CHECK_WHEEL=path.whl     use this pyobjc-framework-Metal wheel instead of downloading it
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
clang=${METAL_CHECK_CLANG:-clang++-16}

if ! command -v "$clang" >/dev/null 2>&1; then
  if [ "$clang" = clang++-16 ] && command -v apt-get >/dev/null 2>&1; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "metal check: installing clang-16 (Debian package)" >&2
    $sudo apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends clang-16 >/dev/null
  fi
fi
if ! command -v "$clang" >/dev/null 2>&1; then
  echo "metal check: $clang not found: install it (apt-get install clang-16) or set METAL_CHECK_CLANG" >&2
  exit 1
fi
if ! command -v python3 >/dev/null 2>&1 || ! python3 -m pip --version >/dev/null 2>&1; then
  echo "metal check: python3 with pip is needed to fetch pyobjc-framework-Metal" >&2
  exit 1
fi

export METAL_CHECK_CLANG="$clang"
exec python3 "$here/check.py"
