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
}

ACTIVE: set = set() if os.environ.get("MSL_FUZZ_NO_WORKAROUNDS") else set(KNOWN)


def active(name: str) -> bool:
    return name in ACTIVE


def disable_all() -> None:
    ACTIVE.clear()
