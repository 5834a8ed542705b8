#!/usr/bin/env python3
"""Checks the include layers of DESIGN.md section 1, the Python package's import graph and file sizes:
every `#include "..."` in cpp/include, cpp/src and cpp/python must point to a layer its file may
use; the modules of python/metalcall must not import each other in a circle; no source file under
cpp/ and python/ may be longer than MAX_LINES. Prints each broken rule as file:line and exits 1;
prints a one-line summary and exits 0 when the tree is clean.

Usage: python tools/check_layers.py [--root REPO]      (Python 3 standard library only)
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

SOURCE_SUFFIXES = {".hpp", ".h", ".cpp", ".mm", ".cc"}
SCANNED_DIRS = ("cpp/include", "cpp/src", "cpp/python")
# The MSL "metal_stdlib" headers include each other by bare file name; they are the
# kernels' standard library, compiled into kernels, not part of the C++ program.
SKIPPED_DIRS = ("cpp/src/msl/prelude",)

# Backends that share the translated wing (MSL translated to C++ / CUDA C++).
TRANSLATED_BACKENDS = {"cpu", "cuda"}
# Backends that share the Metal plan (backends/metal_plan/): the Objective-C++ driver and the
# Metal simulator, which executes the same plans on Linux (DESIGN.md section 6).
METAL_PLAN_BACKENDS = {"metal", "metal_sim"}
# The one header of the translated wing they may include too: the host C++ compiler, whose
# preprocessor gives them the source as Metal compiles it, defines= applied, as it gives the CPU
# backend (the Metal backend's reflection, P2.1 item 1).
HOST_PREPROCESSOR_HEADER = "cpp/src/backends/translated/host_cxx.hpp"

# Objective-C / Apple framework headers: only the Metal backend may see them.
APPLE_FRAMEWORKS = {"Metal", "MetalKit", "MetalPerformanceShaders", "Foundation", "QuartzCore",
                    "AppKit", "Cocoa", "objc"}

INCLUDE_RE = re.compile(r'^\s*#\s*(include|import)\s*([<"])([^>"]+)[>"]')
# A raw string literal that opens on a line: its lines are text, not preprocessor lines.
RAW_OPEN_RE = re.compile(r'(?<![A-Za-z0-9_])(?:u8|u|U|L)?R"([^()\\\s]{0,16})\(')

LAYER_NAMES = {
    "api": "metalcall/",
    "core": "core/",
    "msl": "msl/",
    "translated": "backends/translated/",
    "metal_plan": "backends/metal_plan/",
    "python": "cpp/python/",
}


def layer_title(layer: str) -> str:
    """How messages name a layer: by the include path that reaches it."""
    if layer.startswith("backend:"):
        return f"backends/{layer[8:]}/"
    return LAYER_NAMES.get(layer, layer)


def layer_of(rel: str) -> str | None:
    """The layer of a file given by its path relative to the repository root, or None."""
    parts = rel.split("/")
    if parts[:3] == ["cpp", "include", "metalcall"] and len(parts) > 3:
        return "api"
    if parts[:2] == ["cpp", "python"] and len(parts) > 2:
        return "python"
    if parts[:2] == ["cpp", "src"] and len(parts) > 3:
        return src_layer(parts[2:])
    return None


def src_layer(parts: list[str]) -> str | None:
    """The layer of a path relative to cpp/src (also how an unresolved include is read)."""
    if len(parts) < 2:
        return None
    if parts[0] in ("core", "msl"):
        return parts[0]
    if parts[0] == "backends" and len(parts) > 2:
        if parts[1] in ("translated", "metal_plan"):
            return parts[1]
        return f"backend:{parts[1]}"
    return None


def allowed_targets(layer: str) -> list[str]:
    """The layers a file of `layer` may include (quoted includes), in the order messages list them."""
    if layer == "api":
        return ["api"]
    if layer == "core":
        return ["api", "core"]
    if layer == "msl":
        return ["api", "msl"]
    if layer == "translated":
        return ["api", "core", "msl", "translated"]
    if layer == "metal_plan":
        return ["api", "core", "metal_plan"]
    if layer == "python":
        return ["api", "python"]
    if layer.startswith("backend:"):
        shared = ["translated"] if layer[8:] in TRANSLATED_BACKENDS else []
        shared += ["metal_plan"] if layer[8:] in METAL_PLAN_BACKENDS else []
        return ["api", "core", "msl", *shared, layer]
    return []


def includes_of(path: Path):
    """Yields (line number, "include" or "import", '<' or '"', included name) of the file's
    #include/#import lines,
    skipping lines inside raw string literals."""
    raw_end = None
    text = path.read_text(encoding="utf-8", errors="replace")
    for number, line in enumerate(text.splitlines(), 1):
        if raw_end is not None:
            if raw_end in line:
                line = line[line.index(raw_end) + len(raw_end):]
                raw_end = None
            else:
                continue
        else:
            m = INCLUDE_RE.match(line)
            if m:
                yield number, m.group(1), m.group(2), m.group(3).strip()
                continue
        # Find a raw string left open at the end of this line.
        pos = 0
        while True:
            m = RAW_OPEN_RE.search(line, pos)
            if not m:
                break
            close = ")" + m.group(1) + '"'
            end = line.find(close, m.end())
            if end < 0:
                raw_end = close
                break
            pos = end + len(close)


def resolve(root: Path, including: Path, name: str) -> str | None:
    """The repository-relative path a quoted include names, searched as the build does:
    the including file's folder, then cpp/src, then cpp/include; None if not found."""
    for base in (including.parent, root / "cpp" / "src", root / "cpp" / "include"):
        candidate = (base / name).resolve()
        if candidate.is_file():
            try:
                return candidate.relative_to(root.resolve()).as_posix()
            except ValueError:
                return None  # outside the repository
    return None


def target_layer(root: Path, including: Path, name: str) -> tuple[str | None, str]:
    """(layer, how it was found) of a quoted include."""
    rel = resolve(root, including, name)
    if rel is not None:
        return layer_of(rel), rel
    parts = name.split("/")
    if parts[0] == "metalcall" and len(parts) > 1:
        return "api", "generated public header"  # e.g. metalcall/version.hpp from version.hpp.in
    return src_layer(parts), "not found in its folder, cpp/src or cpp/include"


def source_files(root: Path):
    skipped = [root / d for d in SKIPPED_DIRS]
    for top in SCANNED_DIRS:
        base = root / top
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
                continue
            if any(s == path or s in path.parents for s in skipped):
                continue
            yield path


def check(root: Path) -> tuple[list[str], dict]:
    """Returns (violation lines, counts)."""
    problems: list[str] = []
    counts = {"files": 0, "quoted": 0, "angle": 0}
    per_layer: dict[str, int] = {}
    for path in source_files(root):
        rel = path.relative_to(root).as_posix()
        layer = layer_of(rel)
        counts["files"] += 1
        if layer is None:
            problems.append(f"{rel}:1: this file is in no layer: put it under cpp/include/metalcall/, "
                            "cpp/src/core/, cpp/src/msl/, cpp/src/backends/<name>/ or cpp/python/")
            continue
        per_layer[layer] = per_layer.get(layer, 0) + 1
        for number, directive, kind, name in includes_of(path):
            where = f"{rel}:{number}"
            if kind == "<":
                counts["angle"] += 1
                top = name.split("/")[0]
                if top == "pybind11" and layer != "python":
                    problems.append(f"{where}: #{directive} <{name}>: pybind11 belongs to the bindings; "
                                    f"a file in {layer_title(layer)} may not include it (only cpp/python/ may)")
                elif top in APPLE_FRAMEWORKS and "/" in name and layer != "backend:metal":
                    problems.append(f"{where}: #{directive} <{name}>: Objective-C/Metal headers belong to "
                                    f"the Metal backend; a file in {layer_title(layer)} may not include them "
                                    "(only cpp/src/backends/metal/ may)")
                continue
            counts["quoted"] += 1
            target, found = target_layer(root, path, name)
            if target is None:
                problems.append(f'{where}: #{directive} "{name}": the included file ({found}) is in no '
                                "layer; include headers by their path under cpp/src or cpp/include")
                continue
            allowed = allowed_targets(layer)
            if found == HOST_PREPROCESSOR_HEADER and layer.startswith("backend:") and layer[8:] in METAL_PLAN_BACKENDS:
                continue
            if target not in allowed:
                names = ", ".join(layer_title(t) for t in allowed)
                problems.append(f'{where}: #{directive} "{name}": a file in {layer_title(layer)} may not '
                                f"include {layer_title(target)} (it may include only: {names})")
    counts["layers"] = per_layer
    return problems, counts


# --------------------------------------------------------------------------- Python import circles
# Every import statement of a module is an edge, those inside functions (and under `if TYPE_CHECKING:`)
# included: an import moved into a function only hides a circle from Python's start-up, and the circle
# of metalcall.numpy was held apart exactly that way. A function-level import that makes no circle
# (a lazily loaded command of `python -m metalcall`, say) is fine. Package initialisation is not an
# edge: importing a.b.c runs a/__init__.py and a/b/__init__.py first, which import their own
# submodules; only statements that name a module count.
PYTHON_ROOT = "python"
PYTHON_PACKAGES = ("metalcall",)


def python_modules(root: Path) -> dict[str, Path]:
    """Module name -> file of every module of the scanned packages. A .pyi stub without a .py is an
    extension module (metalcall._core): a module that imports none of the package."""
    base = root / PYTHON_ROOT
    modules: dict[str, Path] = {}
    for package in PYTHON_PACKAGES:
        top = base / package
        if not top.is_dir():
            continue
        for path in sorted(top.rglob("*.py*")):
            if path.suffix not in (".py", ".pyi") or not path.is_file():
                continue
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            name = ".".join(parts)
            if path.suffix == ".py" or name not in modules:
                modules[name] = path
    return modules


def known_module(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of a dotted name that is one of `modules` (None: an outside module)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> dict[str, int]:
    """The modules of the scanned packages that `name` (the module in `path`) imports -> the line of
    its first import of each. `from P import x` imports P.x when that is a module, else P."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name if path.stem == "__init__" else name.rpartition(".")[0]
    edges: dict[str, int] = {}

    def add(target: str | None, line: int) -> None:
        if target is not None and target != name and line < edges.get(target, line + 1):
            edges[target] = line

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(known_module(alias.name, modules), node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)] if node.level > 1 else anchor
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                child = f"{base}.{alias.name}"
                add(child if alias.name != "*" and child in modules else known_module(base, modules), node.lineno)
    return edges


def strongly_connected(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module, each sorted, in name order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def shortest_cycle(graph: dict[str, dict[str, int]], start: str, members: set[str]) -> list[str]:
    """A shortest path start -> ... -> start within `members` (breadth first)."""
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for succ in sorted(graph[node]):
                if succ not in members:
                    continue
                if succ == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return list(reversed(path)) + [start]
                if succ not in previous:
                    previous[succ] = node
                    following.append(succ)
        frontier = following
    return [start, start]  # not reached for a strongly connected component


def check_import_circles(root: Path) -> tuple[list[str], dict]:
    """Returns (one line per import circle, counts). A circle is a strongly connected component of
    the import graph; its line shows a shortest circle through its first module and names the rest."""
    modules = python_modules(root)
    # A stub's imports are for type checkers; the extension it describes imports none of the package.
    graph = {name: imports_of(name, path, modules) if path.suffix == ".py" else {} for name, path in modules.items()}
    problems = []
    for component in strongly_connected(graph):
        cycle = shortest_cycle(graph, component[0], set(component))
        steps = [f"{a} imports {b} at {modules[a].relative_to(root).as_posix()}:{graph[a][b]}"
                 for a, b in zip(cycle, cycle[1:])]
        first = modules[cycle[0]].relative_to(root).as_posix()
        rest = [m for m in component if m not in cycle]
        also = f"; also in this circle: {', '.join(rest)}" if rest else ""
        problems.append(f"{first}:{graph[cycle[0]][cycle[1]]}: import circle: {' -> '.join(cycle)} "
                        f"({'; '.join(steps)}){also}. Make one side not import the other: the lower "
                        "module takes what it needs as arguments or registrations (docs/design.md)")
    counts = {"modules": len(modules), "imports": sum(len(edges) for edges in graph.values())}
    return problems, counts


# --------------------------------------------------------------------------- file sizes
MAX_LINES = 700
SIZE_SUFFIXES = {".cpp", ".hpp", ".h", ".mm", ".cc", ".py"}
SIZE_DIRS = ("cpp", "python")  # the MSL prelude headers under cpp/src/msl/prelude included


def check_file_sizes(root: Path) -> tuple[list[str], dict]:
    """Returns (one line per source file over MAX_LINES lines, counts)."""
    problems = []
    files = 0
    for top in SIZE_DIRS:
        base = root / top
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            if path.suffix not in SIZE_SUFFIXES or not path.is_file():
                continue
            files += 1
            lines = len(path.read_text(encoding="utf-8", errors="replace").splitlines())
            if lines > MAX_LINES:
                problems.append(f"{path.relative_to(root).as_posix()}:{MAX_LINES + 1}: {lines} lines, over the "
                                f"{MAX_LINES}-line limit for a source file: split it by what its parts do")
    return problems, {"files": files}


def main(argv: list[str] | None = None) -> int:
    default_root = Path(__file__).resolve().parent.parent
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=default_root,
                        help="repository root holding cpp/ (default: %(default)s)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    if not (root / "cpp").is_dir():
        print(f"check_layers: {root} has no cpp/ folder; pass the repository root with --root", file=sys.stderr)
        return 2
    problems, counts = check(root)
    circles, graph_counts = check_import_circles(root)
    long_files, size_counts = check_file_sizes(root)
    for line in problems + circles + long_files:
        print(line)
    layers = ", ".join(f"{layer_title(k)} {v}" for k, v in sorted(counts["layers"].items()))
    summary = (f"{counts['files']} files ({layers}), {counts['quoted']} quoted and "
               f"{counts['angle']} angle-bracket includes; {graph_counts['modules']} Python modules "
               f"({graph_counts['imports']} imports between them); {size_counts['files']} source files "
               f"under {' and '.join(d + '/' for d in SIZE_DIRS)}")
    failures = []
    if problems:
        failures.append(f"{len(problems)} include(s) break the layer rules (DESIGN.md section 1)")
    if circles:
        failures.append(f"{len(circles)} import circle(s) in {PYTHON_ROOT}/")
    if long_files:
        failures.append(f"{len(long_files)} source file(s) over {MAX_LINES} lines")
    if failures:
        print(f"check_layers: FAILED: {'; '.join(failures)}; {summary}")
        return 1
    print(f"check_layers: ok: {summary}; all within the layer rules, no import circle, "
          f"no file over {MAX_LINES} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
