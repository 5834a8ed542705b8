"""Helpers of the production-kernel tests (issue P1.6 point 4): where the public MSL
corpus lies, building chosen kernels of a public file (flattened by
tools/msl_corpus_survey.py, imported, not duplicated), and C structs read from a public
header as NumPy structured dtypes. Nothing of the public sources is copied here."""

from __future__ import annotations

import functools
import importlib.util
import os
import re
from pathlib import Path

import numpy as np
import pytest

import metalcall as mc

REPO = Path(__file__).resolve().parents[2]
SURVEY = REPO / "tools" / "msl_corpus_survey.py"


def corpus_root() -> Path:
    """$METALCALL_CORPUS, else <repo root>/.devcarry/corpus (gitignored; docs/msl-corpus.md
    says how to fill it)."""
    env = os.environ.get("METALCALL_CORPUS")
    return Path(env) if env else REPO / ".devcarry" / "corpus"


def require(relpath: str) -> Path:
    """The public file at corpus_root()/relpath, or skip the test saying why."""
    path = corpus_root() / relpath
    if not path.is_file():
        pytest.skip(f"public MSL file not present: {path} (set METALCALL_CORPUS or fetch the corpus "
                    "as docs/msl-corpus.md describes)")
    return path


def _require_in(relpath: str, variable: str, folder: str, which: str) -> Path:
    """The public file at relpath under $`variable`, else <repo root>/.devcarry/`folder`
    (docs/msl-corpus.md), or skip the test saying why."""
    env = os.environ.get(variable)
    path = (Path(env) if env else REPO / ".devcarry" / folder) / relpath
    if not path.is_file():
        pytest.skip(f"public MSL file not present: {path} (set {variable} or fetch the {which} corpus "
                    "as docs/msl-corpus.md describes)")
    return path


def require2(relpath: str) -> Path:
    """The public file at the second corpus's relpath, or skip the test saying why."""
    return _require_in(relpath, "METALCALL_CORPUS2", "corpus2", "second")


def require3(relpath: str) -> Path:
    """The public file at the third corpus's relpath, or skip the test saying why."""
    return _require_in(relpath, "METALCALL_CORPUS3", "corpus3", "third")


@functools.lru_cache(maxsize=None)
def survey():
    """tools/msl_corpus_survey.py as a module (its flatten/expand/chunks/kernel_names)."""
    spec = importlib.util.spec_from_file_location("msl_corpus_survey", SURVEY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.lru_cache(maxsize=None)
def _split(path: Path, include_dirs: tuple, defines: tuple):
    """(helpers, kernels) of the flattened, expanded file, as the survey splits them:
    helpers are (chunk index, text), kernels (host names, text)."""
    s = survey()
    text = s.expand(s.flatten(path.resolve(), [Path(d) for d in include_dirs]), list(defines))
    helpers, kernels = [], []
    for i, chunk in enumerate(s.chunks(text)):
        names = s.kernel_names(chunk)
        (kernels.append((tuple(names), chunk)) if names else helpers.append((i, chunk)))
    return helpers, kernels


_BUILT: dict = {}
_HELPERS: dict = {}  # (backend, device, file, ...) -> the helpers that compile there


def kernel(dev: mc.Device, path: Path, name: str, *, include_dirs=(), defines=(), also=(), constants=None):
    """The kernel `name` of the public file, compiled on `dev` from every helper declaration
    of the file plus the instantiations of `name` and `also` (one library per set of
    names, cached). A helper that does not compile on this backend is left out the way
    the survey leaves it out (its Survey.keep_helpers, once per file and device), so that
    only the kernels that need it fail."""
    wanted = (name, *also)
    file_key = (dev.backend, dev.name, str(path), tuple(map(str, include_dirs)), tuple(defines))
    key = file_key + (tuple(sorted(wanted)),)
    lib = _BUILT.get(key)
    if lib is None:
        helpers, kernels = _split(path, tuple(str(d) for d in include_dirs), tuple(defines))
        chosen = [text for names, text in kernels if set(names) & set(wanted)]
        known = {n for names, _ in kernels for n in names}
        missing = [n for n in wanted if n not in known]
        assert not missing, f"{path.name} has no kernel {missing} (the public file changed?)"
        s = survey()

        def build(parts):
            src = s.HEADER + "\n".join(text for _, text in parts) + "\n" + "\n".join(chosen)
            lib = dev.compile(src)
            lib.function(name, constants=constants)  # a deferred build error shows here
            return lib

        try:
            lib = build(_HELPERS.get(file_key, helpers))
        except mc.CompileError:
            if file_key in _HELPERS:  # the helpers were pruned already: the kernel's own error
                raise
            kept, _, fatal = s.Survey(dev, 1, 0).keep_helpers(helpers)
            _HELPERS[file_key] = kept
            if fatal or len(kept) == len(helpers):
                raise
            lib = build(kept)
        _BUILT[key] = lib
    return lib.function(name, constants=constants)


_C_TYPES = {
    "bool": "?", "char": "i1", "int8_t": "i1", "uint8_t": "u1", "short": "<i2", "int16_t": "<i2",
    "uint16_t": "<u2", "ushort": "<u2", "int": "<i4", "int32_t": "<i4", "uint": "<u4", "uint32_t": "<u4",
    "int64_t": "<i8", "uint64_t": "<u8", "float": "<f4", "half": "<f2",
}


def c_struct(header: Path, name: str) -> np.dtype:
    """The NumPy dtype (C layout: aligned, padded) of `typedef struct { ... } name;` or
    `struct name { ... };` as the public header declares it, fields in its order with its
    types (scalar fields, `const` or not, and fixed arrays of them)."""
    text = re.sub(r"//[^\n]*|/\*.*?\*/", "", header.read_text(), flags=re.S)
    n = re.escape(name)
    m = (re.search(r"typedef\s+struct\s*\{([^{}]*)\}\s*" + n + r"\s*;", text)
         or re.search(r"\bstruct\s+" + n + r"\s*\{([^{}]*)\}\s*;", text))
    assert m, f"{header.name} declares no struct {name}"
    fields = []
    for decl in m.group(1).split(";"):
        decl = re.sub(r"^\s*const\s+", "", decl).strip()
        if not decl:
            continue
        d = re.fullmatch(r"(\w+)\s+(\w+)\s*(?:\[\s*(\d+)\s*\])?", decl)
        assert d and d.group(1) in _C_TYPES, f"{name}: field '{decl}' not understood"
        ctype, field, count = d.groups()
        fields.append((field, _C_TYPES[ctype], (int(count),)) if count else (field, _C_TYPES[ctype]))
    return np.dtype(fields, align=True)


def c_args(header: Path, name: str, **values) -> np.void:
    """A structured scalar of the struct `name`: every field given, as the host code fills it."""
    dt = c_struct(header, name)
    missing = set(dt.names) - set(values)
    extra = set(values) - set(dt.names)
    assert not missing and not extra, f"{name}: missing {sorted(missing)}, unknown {sorted(extra)}"
    rec = np.zeros(1, dt)
    for k, v in values.items():
        rec[k] = v
    return rec[0]
