"""Constructs the generator steers around because metalcall is known to get them wrong.

Each entry names a reported defect; the generator applies the workaround only while
the entry is listed in `ACTIVE`. `--no-workarounds` (or MSL_FUZZ_NO_WORKAROUNDS=1)
turns them all off, to check whether a fix has landed. Remove an entry with its fix.
"""

from __future__ import annotations

import os

KNOWN = {
    "char-element": (
        "A component of a char vector (v.x, v[i]) is `signed char` in the translation while "
        "a scalar `char` is `char`: a template given both (hadd(c, v.x), a user template) "
        "does not compile ('no matching function'). The generator converts such components "
        "to char explicitly."
    ),
    "barrier-in-functor": (
        "A threadgroup_barrier (or SIMD-group function) reached only through a functor's "
        "operator() is not seen: the kernel runs as a plain loop and the barrier does nothing "
        "(issue P2.0 item 1, being fixed). The generator puts such exchanges in plain helper "
        "functions only."
    ),
}

ACTIVE: set = set() if os.environ.get("MSL_FUZZ_NO_WORKAROUNDS") else set(KNOWN)


def active(name: str) -> bool:
    return name in ACTIVE


def disable_all() -> None:
    ACTIVE.clear()
