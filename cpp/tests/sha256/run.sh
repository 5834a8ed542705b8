#!/usr/bin/env bash
# The cache keys' SHA-256 (cpp/src/core/sha256.hpp) against Python's hashlib: FIPS 180-4's
# examples, every length from 0 to 300 bytes (the padding's boundaries at 55/56 and 119/120),
# a million bytes, each fed in pieces of several sizes. Build folder: $SHA256_BUILD_DIR.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
src="$(cd "$here/../../src" && pwd)"
out="${SHA256_BUILD_DIR:-/tmp/sha256-work}"
mkdir -p "$out"
g++ -std=c++17 -O2 -Wall -Wextra -Werror -I"$src" "$here/sha256_test.cpp" -o "$out/sha256_test"
python3 - "$out/sha256_test" <<'PY'
import hashlib, random, subprocess, sys
rng = random.Random(180_4)
messages = [b"", b"abc", b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", b"a" * 1_000_000]
messages += [bytes(rng.randrange(256) for _ in range(n)) for n in range(301)]
cases = [(m, chunk) for m in messages for chunk in (1, 7, 64, 65, 4099)]
text = "".join(f"{m.hex() or '-'} {chunk}\n" for m, chunk in cases)
got = subprocess.run([sys.argv[1]], input=text, capture_output=True, text=True, check=True).stdout.split()
bad = [(len(m), chunk) for (m, chunk), g in zip(cases, got) if g != hashlib.sha256(m).hexdigest()]
if len(got) != len(cases) or bad:
    sys.exit(f"FAIL: {len(bad)} of {len(cases)} digests differ from hashlib's (length, chunk): {bad[:8]}")
print(f"ok: {len(cases)} digests equal hashlib's")
PY
