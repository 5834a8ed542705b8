"""Static objects with destructors are destroyed by exit() while daemon threads may still be
inside a released call (a compile reading the front end's keyword sets, a cache write
updating the eviction state): a destroyed std::set under a running lookup is a SIGSEGV at
interpreter exit (seen once in CI, in the 20 runs of test_kernel_faults' exit-with-daemon-threads test). So the
C++ sources keep such statics on the heap and never destroy them
(`static const auto& names = *new std::set<std::string>{...};`); this test finds any
that is not."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [p for d in ("cpp/src", "cpp/python") for p in sorted((ROOT / d).rglob("*"))
           if p.suffix in {".cpp", ".hpp", ".mm", ".h"} and "prelude" not in p.parts]

# A static (function-local or at namespace scope) of a standard type that owns memory.
OWNING = r"std::(?:set|map|multimap|unordered_set|unordered_map|vector|deque|list|string|regex|function|shared_ptr)\b"
STATIC_OWNER = re.compile(rf"^\s*static\s+(?:const\s+)?{OWNING}[^()&]*?\s\w+(?:\[\])?\s*(?:=|;|\{{)", re.M)
NAMESPACE_OWNER = re.compile(rf"^(?:const\s+)?{OWNING}[^()&]*?\s\w+(?:\[\])?\s*(?:=|;|\{{)", re.M)


def owning_statics(text: str) -> list[str]:
    return [m.group(0).strip() for pattern in (STATIC_OWNER, NAMESPACE_OWNER) for m in pattern.finditer(text)]


@pytest.mark.skipif(not SOURCES, reason="the C++ sources are not beside the tests (an installed copy)")
def test_no_static_is_destroyed_at_exit():
    found = [f"{p.relative_to(ROOT)}: {line}" for p in SOURCES for line in owning_statics(p.read_text())]
    assert not found, "statics destroyed at exit (keep them as `static const auto& x = *new T{...}`):\n" + "\n".join(found)


@pytest.mark.parametrize("line, flagged", [
    ('  static const std::set<std::string> k = {"a"};', True),
    ("  static std::map<std::string, State> states;", True),
    ('static const std::string xyzw = "xyzw";', True),
    ("const std::vector<int> kTable = {1, 2};", True),
    ('  static const auto& k = *new std::set<std::string>{"a"};', False),
    ("  static std::string unquote(const std::string& s) {", False),
    ("std::string cpu_entry_symbol(std::size_t index);", False),
    ("  static std::mutex mutex;", False),
])
def test_the_scan_tells_owning_statics_apart(line, flagged):
    assert bool(owning_statics(line + "\n")) == flagged
