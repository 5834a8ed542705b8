"""A library's compile error, attributed to the programs it names.

A batch is one library of many programs. When it does not compile, the compiler's log
names the lines of every error it reports (NVRTC all of them, clang its first 20), so the
failing programs are found from that one compile rather than by compiling halves: a batch
with k failing programs costs about k / 20 + 2 compiles, not about 2 k log2(batch). The
programs are whole and share no names, so an error's line is its own program's (one
program's error does not run on into the next).
"""

from __future__ import annotations

import re

from .printer import PRELUDE, program_source

# clang and gcc: `source.metal:12:5: error:`; NVRTC: `source.metal(12): error:`.
_DIAGNOSTIC = re.compile(r"^(\S+?)(?::(\d+):\d+:|\((\d+)\):) (error|warning|note|remark)\b")
_LINE = re.compile(r"source\.metal(?::(\d+)(:\d+:)|\((\d+)\)(:))")


def _errors(log: str) -> list[tuple[int, int, int]]:
    """(source line, first row, end row) of each error and of each note of an error (not of a
    warning) in the log that names a line of source.metal; the rows are the error's."""
    rows = log.splitlines()
    heads = [(i, m) for i, row in enumerate(rows) if (m := _DIAGNOSTIC.match(row))]
    found, owner = [], None
    for n, (i, m) in enumerate(heads):
        if m.group(4) != "note":
            owner = i if m.group(4) == "error" else None
            end = next((j for j, h in heads[n + 1:] if h.group(4) != "note"), len(rows))
        if owner is not None and m.group(1) == "source.metal":
            found.append((int(m.group(2) or m.group(3)), owner, end))
    return found


def first_lines(programs: list) -> list[int]:
    """The line each program's text starts on in library_source(programs)."""
    line = PRELUDE.count("\n") + 2  # the prelude, then the blank line library_source adds
    starts = []
    for p in programs:
        starts.append(line)
        line += program_source(p).count("\n") + 1  # its text and the joining newline
    return starts


def error_lines(exc: Exception) -> list[int]:
    """The source lines of a CompileError's errors: the one it reports, then the log's errors'
    and their notes' (an error inside the prelude's templates names its user's line in a note)."""
    first = getattr(exc, "line", None)
    return ([first] if first else []) + [line for line, _, _ in _errors(getattr(exc, "log", "") or "")]


def attribute(exc: Exception, group: list) -> dict:
    """{index in group: the error's text as the program compiled alone reports it} for the
    programs whose lines the error names; empty when it names none of them."""
    programs = [g.program for g in group]
    starts = first_lines(programs)
    ends = starts[1:] + [float("inf")]
    alone = first_lines(programs[:1])[0]
    found: dict = {}
    for line in error_lines(exc):
        k = next((i for i, (s, e) in enumerate(zip(starts, ends)) if s <= line < e), None)
        if k is None or k in found:
            continue
        shift = starts[k] - alone
        text = str(exc) if getattr(exc, "line", None) == line else _block(getattr(exc, "log", ""), line)
        found[k] = f"{type(exc).__name__}: " + _LINE.sub(
            lambda m: _renumbered(m, shift), text)
    return found


def _block(log: str, line: int) -> str:
    """The log's error that names `line` (in its own line or a note's), up to the next error
    or warning."""
    for named, start, end in _errors(log):
        if named == line:
            return "\n".join(log.splitlines()[start:min(end, start + 12)])
    return f"source.metal:{line}:1: error (see the library's log)"


def _renumbered(m: re.Match, shift: int) -> str:
    if m.group(1):
        return f"source.metal:{int(m.group(1)) - shift}{m.group(2)}"
    return f"source.metal({int(m.group(3)) - shift}){m.group(4)}"
