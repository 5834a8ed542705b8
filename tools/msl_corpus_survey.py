"""Compile-rate survey of public MSL sources (issue P1.6 point 4) on the CPU backend
(and CUDA when present): for each .metal file, how many of its kernels compile and why
the others fail.

    python tools/msl_corpus_survey.py FILE.metal [FILE ...] [-I DIR ...] [-D NAME=VALUE ...] [--prepend FILE ...]
                                      [--device cpu|cuda|all|nvrtc] [--checked] [--batch 64] [--jobs N] [--markdown]

The files are read where they are (a scratch copy of the public repository; never put
them in this project); FILE may be `HEADER::NAME`, the raw string literal NAME of a C++ header
(MSL kept in host code). Quoted #includes are inlined (searched next to the including file,
then in the -I folders); <metal_*> includes are the prelude's; other angle includes are
dropped. The result is expanded with the host preprocessor (__METAL_VERSION__ = 320, __METAL__
and __HAVE_BFLOAT__ as metalcall predefines them, the -D macros) so that kernels made by macros can be counted: a kernel is a top-level
declaration with [[host_name("...")]] or a `kernel void NAME(...)` definition.

A source with function constants builds when its first kernel is asked for (with no
constant values given): the survey asks, so that such a build error counts.
Kernels are compiled in batches together with every non-kernel declaration of the file;
when a batch fails at a kernel's own declaration that kernel fails and the rest are tried
again, as are the kernels an NVRTC error names in its instantiation context (CUDA); when it
fails inside a shared template otherwise, the batch is split in halves, until each
failing kernel is alone and its compile error is its reason (within --budget compiles). A non-kernel declaration that fails on its own is left out
first (reported as a "helper" failure). On the CPU the host compiler runs at -O0 (a
METALCALL_CXX wrapper): the survey is about what compiles, not speed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import metalcall as mc

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
HOST_NAME = re.compile(r'host_name\s*\(\s*((?:"[^"]*"\s*)+)\)')  # adjacent literals concatenate
# <TargetConditionals.h>'s macros as metalcall's preprocessing defines them (a Mac's platform).
TARGET_CONDITIONALS = ["TARGET_OS_MAC 1", "TARGET_OS_OSX 1", "TARGET_OS_IPHONE 0", "TARGET_OS_IOS 0",
                       "TARGET_OS_MACCATALYST 0", "TARGET_OS_TV 0", "TARGET_OS_WATCH 0", "TARGET_OS_VISION 0",
                       "TARGET_OS_XR 0", "TARGET_OS_BRIDGE 0", "TARGET_OS_DRIVERKIT 0", "TARGET_OS_EMBEDDED 0",
                       "TARGET_OS_SIMULATOR 0", "TARGET_IPHONE_SIMULATOR 0", "TARGET_OS_UNIX 0", "TARGET_OS_WIN32 0",
                       "TARGET_OS_WINDOWS 0", "TARGET_OS_LINUX 0", "TARGET_RT_LITTLE_ENDIAN 1", "TARGET_RT_BIG_ENDIAN 0",
                       "TARGET_RT_64_BIT 1"]
PLAIN_KERNEL = re.compile(r'(?:\bkernel|\[\[\s*kernel\s*\]\])\s+void\s+(\w+)\s*\(')


def read_source(path: Path) -> str:
    """The file's text; for `HEADER::NAME`, the C++ raw string literal NAME of HEADER
    (`NAME = R"tag(...)tag"`: MSL that a project keeps in its host code, as MNN does)."""
    file, _, name = str(path).partition("::")
    text = Path(file).read_text(errors="replace")
    if not name:
        return text
    m = re.search(r"\b" + re.escape(name) + r'\s*=\s*R"(\w*)\((.*?)\)\1"', text, re.S)
    if not m:
        raise SystemExit(f"{file} has no raw string literal {name}")
    return m.group(2)


def flatten(path: Path, include_dirs, seen=None, drop=()) -> str:
    """The file's text with quoted includes inlined once each; <metal_*> and other angle
    includes removed, and quoted ones whose file name is in `drop`."""
    seen = set() if seen is None else seen
    out = []
    for line in read_source(path).splitlines():
        m = INCLUDE.match(line)
        if not m:
            out.append(line)
            continue
        kind, name = m.groups()
        if kind == '"' and Path(name).name in drop:
            out.append(f"// (survey) left out #include \"{name}\"")
            continue
        if kind == "<" and name == "TargetConditionals.h":  # metalcall defines a Mac's (msl/lex/preprocessing.cpp)
            out.extend(f"#define {m}" for m in TARGET_CONDITIONALS)
            continue
        if kind == "<":
            out.append(f"// (survey) dropped #include <{name}>")
            continue
        for d in [path.parent, *include_dirs]:
            cand = (d / name).resolve()
            if cand.exists():
                if cand not in seen:
                    seen.add(cand)
                    out.append(flatten(cand, include_dirs, seen, drop))
                break
        else:
            out.append(f"// (survey) not found: #include \"{name}\"")
    return "\n".join(out)


LOOP_PRAGMA = re.compile(r"^[ \t]*#[ \t]*pragma[ \t]+((?:unroll|GCC[ \t]+unroll|clang[ \t]+loop)\b[ \t]*[^ \t/\n].*?)[ \t]*$", re.M)


def expand(text: str, defines) -> str:
    """The host preprocessor's expansion (no line markers, comments dropped). Loop
    pragmas go through _Pragma so that macros in them expand, as Apple's compiler
    expands them (metalcall's own preprocessing does the same: msl/lex/preprocessing.cpp)."""
    cxx = shutil.which("g++") or shutil.which("clang++") or "c++"
    # The macros metalcall predefines by default, as Apple's compiler does for MSL 3.2
    # (msl/lex/preprocessing.cpp): headers then take their MSL branches.
    args = [cxx, "-E", "-P", "-undef", "-x", "c++", "-std=c++17", "-D__METAL_VERSION__=320", "-D__METAL__=1",
            "-D__HAVE_BFLOAT__=1"]
    args += [f"-D{d}" for d in defines] + ["-"]
    text = ("#define METALCALL_PRAGMA_TEXT(x) #x\n#define METALCALL_PRAGMA(x) _Pragma(METALCALL_PRAGMA_TEXT(x))\n"
            + LOOP_PRAGMA.sub(r"METALCALL_PRAGMA(\1)", text))
    r = subprocess.run(args, input=text, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip().splitlines()[0] if r.stderr.strip() else "preprocessor failed")
    return r.stdout


def chunks(text: str):
    """Top-level declarations: split at ';' or a closing '}' (with its ';') at depth 0."""
    out, start, depth, i, n = [], 0, 0, 0, len(text)
    while i < n:
        c = text[i]
        if c == '"' or c == "'":  # skip literals
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c in "({[":
            depth += 1
        elif c in ")}]":
            depth -= 1
            if depth == 0 and c == "}":
                j = i + 1
                while j < n and text[j] in " \t\r\n":
                    j += 1
                end = j + 1 if j < n and text[j] == ";" else i + 1
                out.append(text[start:end])
                start = i = end
                continue
        elif c == ";" and depth == 0:
            out.append(text[start:i + 1])
            start = i + 1
        i += 1
    if text[start:].strip():
        out.append(text[start:])
    return [c for c in out if c.strip()]


def kernel_names(chunk: str):
    names = ["".join(re.findall(r'"([^"]*)"', lits)) for lits in HOST_NAME.findall(chunk)]
    if names:
        return names
    head = chunk.lstrip()
    if head.startswith("template") or "{" not in chunk:
        return []  # a template kernel is a kernel once instantiated
    m = PLAIN_KERNEL.search(chunk)
    return [m.group(1)] if m else []


ENTRY_POINT = re.compile(r"metalcall-entry-point-of-(\d+)-\d+")
NVRTC_HEAD = re.compile(r"^\S.*\(\d+\): (catastrophic error|error|warning|remark): ")


def failing_entry_lines(log: str):
    """The user lines of the kernels an NVRTC error names: each kernel's entry point is
    compiled as a file named after its line (`metalcall-entry-point-of-LINE-COL`), which an
    error's "detected during" context (or the error itself) names. Other compilers' logs
    (the CPU's g++ or clang++) give none, and the survey splits the batch instead."""
    lines, in_error = set(), False
    for text in log.splitlines():
        m = NVRTC_HEAD.match(text)
        if m:
            in_error = "error" in m.group(1)
        if in_error:
            lines.update(int(k) for k in ENTRY_POINT.findall(text))
    return lines


class Survey:
    def __init__(self, dev, batch, budget):
        self.dev = dev
        self.batch = batch
        self.budget = budget  # compiles per file for the kernels
        self.named = set()  # chunk indices of the kernels the last NVRTC error named

    def compile(self, parts):
        """None, or (the chunk index of the error's line or None, the message's first line)."""
        src = HEADER + "\n".join(p for _, p in parts)
        try:
            lib = self.dev.compile(src)
            # With function constants, a build error waits for the first specialisation
            # (translated_library.hpp): ask for one kernel, with no constant values given.
            names = lib.function_names
            if names:
                lib.function(names[0])
            return None
        except mc.CompileError as e:
            msg = str(e).strip().splitlines()[0] if str(e).strip() else "compile error"
            line = getattr(e, "line", None)
            entry_lines = failing_entry_lines(getattr(e, "log", "") or "")
            at = HEADER.count("\n") + 1
            found, self.named = None, set()
            for idx, p in parts:
                n = p.count("\n") + 1
                if line is not None and at <= line < at + n and found is None:
                    found = idx
                if any(at <= k < at + n for k in entry_lines):
                    self.named.add(idx)
                at += n
            return found, msg

    def run(self, helpers, kernels):
        """(compiled kernel names, {kernel name: reason}, [helper failures])."""
        helpers, helper_failures, fatal = self.keep_helpers(helpers)
        if fatal:
            return [], {n: "helpers: " + fatal for _, ns in kernels for n in ns}, helper_failures
        ok, failed = self.run_kernels(helpers, kernel_items(helpers, kernels))
        return ok, failed, helper_failures

    def keep_helpers(self, helpers):
        """(the helpers that compile together, [messages of those left out], a fatal
        message when the helpers fail where no helper can be blamed, else None)."""
        helpers = list(helpers)
        helper_failures = []
        for _ in range(15):
            err = self.compile(helpers)
            if err is None:
                break
            idx, msg = err
            if idx is None:
                return helpers, [msg], msg
            helpers = [(i, p) for i, p in helpers if i != idx]
            helper_failures.append(msg)
        return helpers, helper_failures, None

    def run_kernels(self, helpers, items):
        """(compiled kernel names, {kernel name: reason}) for the kernel items, in batches."""
        ok, failed = [], {}
        budget = [self.budget]

        def attempt(group):
            if not group:
                return
            if budget[0] <= 0:  # out of compiles: the group's kernels take its first error
                err = self.last_error
                failed.update({n: "unresolved: " + err for _, ns, _ in group for n in ns})
                return
            budget[0] -= 1
            err = self.compile(helpers + [(i, p) for i, _, p in group])
            if err is None:
                ok.extend(n for _, ns, _ in group for n in ns)
                return
            self.last_error = err[1]
            culprit = [g for g in group if g[0] == err[0]]
            named = [g for g in group if g[0] in self.named]
            if culprit:  # the error is in a kernel's own declaration: it fails, the rest go on
                failed.update({n: err[1] for n in culprit[0][1]})
                attempt([g for g in group if g[0] != err[0]])
            elif named:  # NVRTC named the kernels whose instantiation failed: they fail, the rest go on
                failed.update({n: err[1] for g in named for n in g[1]})
                attempt([g for g in group if g[0] not in self.named])
            elif len(group) == 1:
                failed.update({n: err[1] for n in group[0][1]})
            else:  # in a template the kernels share: halve the group
                attempt(group[: len(group) // 2])
                attempt(group[len(group) // 2:])

        self.last_error = ""
        budget[0] += -(-len(items) // self.batch)  # every batch is tried once; the budget is for splitting
        for b in range(0, len(items), self.batch):
            attempt(items[b:b + self.batch])
        return ok, failed


def kernel_items(helpers, kernels):
    """(chunk index, names, text) of each kernel chunk; indices after the helpers'."""
    return [(i, ns, p) for i, (ns, p) in enumerate(kernels, start=len(helpers) + 1000000)]


# --jobs: worker processes, each with its own devices.
_WORKER_DEVICES = {}


def _survey_device(kind):
    """The device of that kind; the CPU's checked mode with --checked (passed on to workers
    through the environment)."""
    if kind == "cpu" and os.environ.get("MSL_SURVEY_CHECKED") == "1":
        return mc.Device(kind, checked=True)
    return mc.Device(kind)


def _worker_init(kinds, cxx):
    os.environ.setdefault("METALCALL_CXX", cxx)
    for k in kinds:
        _WORKER_DEVICES[k] = _survey_device(k)


def _helpers_job(job):
    kind, helpers = job
    return Survey(_WORKER_DEVICES[kind], 1, 0).keep_helpers(helpers)


def _batch_job(job):
    kind, helpers, items, budget = job
    return Survey(_WORKER_DEVICES[kind], len(items), budget).run_kernels(helpers, items)


def run_parallel(jobs, kinds, cxx, parsed, batch, budget, on_done=None):
    """Survey.run for every (file, device) at once: the helpers of each file in one pool
    pass, then every batch of kernels as its own job, with `budget` compiles to split it
    (a serial run shares one budget per file). {(file index, kind): (ok, failed, helper failures)};
    on_done(file index, kind, result) as each file is finished, in file order."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")  # no fork of a process holding GPU state
    with ctx.Pool(jobs, initializer=_worker_init, initargs=(kinds, cxx)) as pool:
        keys = [(f, k) for f in range(len(parsed)) for k in kinds]
        kept = dict(zip(keys, pool.map(_helpers_job, [(k, parsed[f][0]) for f, k in keys], chunksize=1)))
        batch_jobs, owners, results = [], [], {}
        for f, k in keys:
            helpers, helper_failures, fatal = kept[(f, k)]
            kernels = parsed[f][1]
            if fatal:
                results[(f, k)] = ([], {n: "helpers: " + fatal for _, ns in kernels for n in ns}, helper_failures)
                continue
            results[(f, k)] = ([], {}, helper_failures)
            items = kernel_items(helpers, kernels)
            for b in range(0, len(items), batch):
                batch_jobs.append((k, helpers, items[b:b + batch], budget))
                owners.append((f, k))
        left = {key: owners.count(key) for key in keys}
        finished = 0

        def report_until(stop):  # files with nothing left to run, in order
            nonlocal finished
            while finished < len(keys) and (stop is None or keys[finished] != stop) and on_done:
                on_done(*keys[finished], results[keys[finished]])
                finished += 1

        for owner, (ok, failed) in zip(owners, pool.imap(_batch_job, batch_jobs, chunksize=1)):
            report_until(owner)
            results[owner][0].extend(ok)
            results[owner][1].update(failed)
            left[owner] -= 1
        report_until(None)
    return results


def fast_cxx_wrapper(tmp: Path) -> str:
    """A METALCALL_CXX that compiles at -O0, with the compiler metalcall itself would pick
    (clang++ 15 or newer first, then g++: host_cxx.cpp)."""
    names = [f"clang++-{v}" for v in range(22, 14, -1)] + ["clang++", "g++"]
    cxx = next((shutil.which(n) for n in names if shutil.which(n)), "c++")
    script = tmp / "cxx-O0"
    script.write_text(f'#!/bin/sh\nargs=""\nfor a in "$@"; do case "$a" in -O3|-O2) a=-O0;; esac; set -- "$@" "$a"; shift; done\nexec {cxx} "$@"\n')
    script.chmod(0o755)
    return str(script)


def reason_text(failed: dict, limit=3):
    counts = Counter(re.sub(r"^source\.metal:\d+:\d+: ", "", r) for r in failed.values())
    return "; ".join(f"{n}x {r[:140]}" for r, n in counts.most_common(limit))


def flatten_with_prepended(f: Path, args) -> str:
    """The --prepend files, then the file, flattened as one text: how projects that join sources
    build their libraries (MNN puts MetalDefine.metal before each shader, torchao its
    common.metal before its kernels)."""
    seen: set = set()
    parts = [flatten(p.resolve(), args.include, seen, set(args.drop_include)) for p in args.prepend]
    return "\n".join(parts + [flatten(f.resolve(), args.include, seen, set(args.drop_include))])


def write_flat(args):
    """--write-flat: each file's text as one compile of the whole file sees it, no device needed."""
    args.write_flat.mkdir(parents=True, exist_ok=True)
    for f in args.files:
        name = str(f.relative_to(args.root)) if args.root else f.name
        text = expand(flatten_with_prepended(f, args), args.defines)
        out = args.write_flat / name.replace("/", "__")
        out.write_text(HEADER + "\n".join(chunks(text)))
        print(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("-I", dest="include", action="append", default=[], type=Path)
    ap.add_argument("-D", dest="defines", action="append", default=[])
    ap.add_argument("--prepend", action="append", default=[], type=Path, help="a file put before each surveyed "
                    "file (repeatable, in order), as a project joins sources into one library")
    ap.add_argument("--drop-include", action="append", default=[], help="leave out quoted includes of this file "
                    "name (to see what compiles once a known blocker is solved)")
    ap.add_argument("--device", default="all", help="cpu, cuda or all (the default: cpu, and cuda when present); nvrtc: "
                    "an NVRTC-only compile check without a GPU (translate_main, then NVRTC's front end: no optimizer, "
                    "no ptxas), needs --translate-main")
    ap.add_argument("--checked", action="store_true", help="the CPU device in checked mode (Device('cpu', checked=True))")
    ap.add_argument("--translate-main", type=Path, default=None, help="cpp/tests/translate's translate_main, for --device nvrtc")
    ap.add_argument("--nvrtc-arch", default="compute_90", help="--device nvrtc's arch: compute_90 (the default) runs "
                    "NVRTC's front end only; sm_90 compiles to a cubin, through NVVM and ptxas, as the CUDA backend does")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--budget", type=int, default=40, help="compiles per file and device for splitting failing batches (then a "
                    "failing group's kernels all take its first error, marked 'unresolved')")
    ap.add_argument("--root", type=Path, default=None, help="print file names relative to this folder")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--write-flat", type=Path, default=None, metavar="DIR", help="only write each file as the survey "
                    "compiles it whole (flattened, expanded, the metal_stdlib header) to DIR, and exit: the input of "
                    "cpp/tests/translate's translate_main and tools/nvrtc_check.py")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (default 1: serial); with more, every "
                    "batch is a job of its own with --budget compiles to split it")
    args = ap.parse_args()

    if args.write_flat:
        return write_flat(args)
    tmp = Path(tempfile.mkdtemp(prefix="msl-survey-"))
    os.environ.setdefault("METALCALL_CXX", fast_cxx_wrapper(tmp))
    kinds = ["cpu", "cuda"] if args.device == "all" else [args.device]
    if args.device == "nvrtc":  # no GPU: translate_main and NVRTC's front end (tools/nvrtc_check.py)
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from nvrtc_check import NvrtcDevice
        if not args.translate_main or args.jobs > 1:
            ap.error("--device nvrtc needs --translate-main PATH and runs serially (--jobs 1)")
        devices = {"nvrtc": NvrtcDevice(str(args.translate_main), args.nvrtc_arch)}
    else:
        present = {d.backend for d in mc.get_devices()}
        if args.checked:
            os.environ["MSL_SURVEY_CHECKED"] = "1"
        devices = {k: _survey_device(k) for k in kinds if k in present}
    parsed, names, problems = [], [], []  # per file: (helpers, kernels); its name; a preprocessor error
    for f in args.files:
        names.append(str(f.relative_to(args.root)) if args.root else str(f))
        helpers, kernels = [], []
        try:
            text = expand(flatten_with_prepended(f, args), args.defines)
            problems.append(None)
        except RuntimeError as e:
            text = ""
            problems.append(str(e))
        for i, c in enumerate(chunks(text)):
            ns = kernel_names(c)
            (kernels.append((ns, c)) if ns else helpers.append((i, c)))
        parsed.append((helpers, kernels))
    results = None
    if args.jobs > 1 and devices:
        def progress(fi, kind, result):  # a partial log survives a time limit
            total = sum(len(ns) for ns, _ in parsed[fi][1])
            print(f"{names[fi]}  {kind}: {len(result[0])} of {total} compiled", file=sys.stderr, flush=True)

        results = run_parallel(args.jobs, list(devices), os.environ["METALCALL_CXX"],
                               [p if not e else ([], []) for p, e in zip(parsed, problems)], args.batch, args.budget,
                               progress)

    cols = ["file", "kernels"] + [f"{k} compiled" for k in devices] + ["failures (count x first error)"]
    rows = []
    for fi, name in enumerate(names):
        if problems[fi]:
            rows.append([name, "?"] + ["-"] * len(devices) + [f"preprocessor: {problems[fi]}"])
            continue
        helpers, kernels = parsed[fi]
        total = sum(len(ns) for ns, _ in kernels)
        row, reasons = [name, str(total)], []
        for kind, dev in devices.items():
            if results is not None:
                ok, failed, helper_failures = results[(fi, kind)]
            else:
                ok, failed, helper_failures = Survey(dev, args.batch, args.budget).run(helpers, kernels)
            row.append(f"{len(ok)} ({100.0 * len(ok) / max(total, 1):.0f}%)")
            if failed:
                reasons.append(f"{kind}: {reason_text(failed)}")
            if helper_failures:
                reasons.append(f"{kind} helpers left out: {len(helper_failures)} ({helper_failures[0][:100]})")
        row.append(" | ".join(reasons).replace("|", "/") if args.markdown else " | ".join(reasons))
        rows.append(row)
        print("  ".join(row), file=sys.stderr, flush=True)

    if args.markdown:
        print("| " + " | ".join(cols) + " |")
        print("|" + "---|" * len(cols))
        for r in rows:
            print("| " + " | ".join(x.replace("\n", " ") for x in r) + " |")
    else:
        for r in [cols] + rows:
            print("\t".join(r))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
