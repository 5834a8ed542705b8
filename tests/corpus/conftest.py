"""Fixtures of the production-kernel tests: the public corpus's location
($METALCALL_CORPUS, else <repo root>/.devcarry/corpus) and the helper module on the path.
Without the corpus (CI) every test here skips at once, naming the missing file."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus_support  # noqa: E402


@pytest.fixture
def corpus() -> Path:
    """The corpus folder (it may not exist: each test skips on its own missing file)."""
    return corpus_support.corpus_root()
