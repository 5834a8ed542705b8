"""Constructs the generator steers around because metalcall is known to get them wrong.

Each entry names a reported defect; the generator applies the workaround only while
the entry is listed in `ACTIVE`. `--no-workarounds` (or MSL_FUZZ_NO_WORKAROUNDS=1)
turns them all off, to check whether a fix has landed. Remove an entry with its fix.
"""

from __future__ import annotations

import os

KNOWN = {
    "packed-conditional": (
        "`c ? p : v` with p a packed_float3 (a buffer element) and v a float3 does not compile "
        "('conditional expression is ambiguous': each converts to the other). Whether Apple's "
        "compiler accepts it is to be checked on a Mac; the generator converts p explicitly."
    ),
    "swizzle-self-assign": (
        "`v.ywxz = v` (a swizzle of every component assigned the vector itself) gives (3, 1, 1, 1) for "
        "v = (1, 2, 3, 4) on the CPU backend, checked or not: the prelude's swizzle_ref::operator= takes "
        "its right-hand side by reference and writes v while reading it (region fuzzer, seed 22101 "
        "program 31, 2026-12-02). The generator writes the right-hand side as a conversion `int4(v)`."
    ),
}

ACTIVE: set = set() if os.environ.get("MSL_FUZZ_NO_WORKAROUNDS") else set(KNOWN)


def active(name: str) -> bool:
    return name in ACTIVE


def disable_all() -> None:
    ACTIVE.clear()
