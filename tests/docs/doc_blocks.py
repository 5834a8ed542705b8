"""The code blocks of the documentation pages (README.md and docs/**/*.md).

A page's ```python blocks run in order in one namespace, as a reader would type them into one
script, in a fresh process on the CPU device (a block that starts worker processes guards that
with `if __name__ == "__main__":`, as a script must). A block that cannot run here (it needs a GPU, a cluster, a
file the reader has) is preceded by a line `<!-- docs-test: skip REASON -->`, and the test
reports it as skipped with that reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SKIP_RE = re.compile(r"^<!--\s*docs-test:\s*skip\s+(?P<reason>.+?)\s*-->\s*$")
FENCE_RE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)\s*(?P<lang>[\w+-]*)")


@dataclass
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    skip_reason: str | None


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(page: Path) -> list[Block]:
    """Every fenced block of a page, with its language and skip marker."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE_RE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, indent = m.group("fence"), len(m.group("indent"))
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i][indent:] if lines[i][:indent].isspace() else lines[i])
            i += 1
        prev = lines[start - 1] if start > 0 else ""
        skip = SKIP_RE.match(prev.strip())
        found.append(Block(page, start + 1, m.group("lang").lower(), "\n".join(body) + "\n",
                           skip.group("reason") if skip else None))
        i += 1
    return found


def python_program(page: Path) -> tuple[str, list[Block], list[Block]]:
    """The page's runnable Python blocks as one program (each block marked so that a failure
    names its line), the blocks it runs and the blocks it skips."""
    run = [b for b in blocks(page) if b.lang in ("python", "py") and b.skip_reason is None]
    skipped = [b for b in blocks(page) if b.lang in ("python", "py") and b.skip_reason is not None]
    parts = []
    for b in run:
        parts.append(f"__doc_block__ = {b.line}\n")
        parts.append(f"exec(compile({b.code!r}, {f'{page.name}:{b.line}'!r}, 'exec'))\n")
    return "".join(parts), run, skipped
