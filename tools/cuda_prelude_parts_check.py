#!/usr/bin/env python3
"""Checks the CUDA prelude parts (cpp/src/backends/translated/prelude_parts.cpp) with NVRTC, no
GPU needed: each MSL source is translated for CUDA (translate_main), compiled with the parts its
translation selects (and -minimal, as the backend compiles them) and with the whole prelude, and
the two PTX texts compared.

    python tools/cuda_prelude_parts_check.py TRANSLATE_MAIN SOURCE... [--arch compute_90]

SOURCE: .metal files, or .json files of {"source": ..., "defines": {...} | [...] | null}
(sources recorded from a test run). Per source: the parts, both compile times, and one of
  same      both compile and the PTX is the same: the parts changed nothing but the time
  DIFFERENT both compile to different PTX (a part left out changed a result: a bug)
  MISSED    only the whole prelude compiles (the backend compiles it again whole: a name the
            parts' tables miss, slower but correct)
  neither   neither compiles (a translation NVRTC refuses either way; not the parts' business)
Exit status 1 when any source is DIFFERENT. translate_main: cpp/tests/translate/run.sh builds it
($TRANSLATE_BUILD_DIR/translate_main). The parts helper is built here with $CXX (default g++)
from prelude_parts.cpp, cpp/tests/translate/prelude_parts_main.cpp and the prelude's headers.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import nvrtc_check  # noqa: E402

PRELUDE = ROOT / "cpp" / "src" / "msl" / "prelude"


def build_helper(work: Path) -> Path:
    """prelude_parts_main, with the parts' table made from the prelude's headers as translated.cmake
    makes it (cpp/build_tools/prelude_part_tables.sh)."""
    headers = sorted(PRELUDE.glob("*.h"))
    gen = work / "embedded_prelude.cpp"
    body = ['#include "backends/translated/embedded_prelude.hpp"', "namespace metalcall::translated {",
            "const EmbeddedFile kEmbeddedPrelude[] = {"]
    for h in headers:
        body.append(f'  {{"{h.name}", R"mcprelude({h.read_text()})mcprelude"}},')
    body += ["};", f"const std::size_t kEmbeddedPreludeCount = {len(headers)};", "}"]
    gen.write_text("\n".join(body) + "\n")
    table = work / "prelude_part_tables.cpp"
    subprocess.run([str(ROOT / "cpp" / "build_tools" / "prelude_part_tables.sh"), str(gen), str(table)], check=True)
    exe = work / "prelude_parts_main"
    cxx = os.environ.get("CXX", "g++")
    translated = ROOT / "cpp" / "src" / "backends" / "translated"
    subprocess.run([cxx, "-std=c++17", "-O1", f"-I{ROOT / 'cpp' / 'src'}",
                    str(ROOT / "cpp" / "tests" / "translate" / "prelude_parts_main.cpp"),
                    str(translated / "prelude_parts.cpp"), str(translated / "prelude_words.cpp"), str(table),
                    "-o", str(exe)], check=True)
    return exe


def code_of(ptx: str) -> list[str]:
    """The PTX less its global data: the whole prelude declares constants (numeric_limits'
    static members) that no kernel reads, which NVRTC emits all the same."""
    return [l for l in ptx.splitlines() if not l.startswith(".global ")]


def load(path: Path) -> tuple[str, list[str]]:
    """The source and translate_main's -D arguments."""
    if path.suffix != ".json":
        return path.read_text(), []
    rec = json.loads(path.read_text())
    defines = rec.get("defines") or {}
    if isinstance(defines, list):
        defines = {d: "1" for d in defines}
    return rec["source"], [f"-D{k}={v}" for k, v in defines.items()]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("translate_main")
    ap.add_argument("sources", nargs="+", type=Path)
    ap.add_argument("--arch", default="compute_90", help="NVRTC -arch (compute_XX: PTX, compared as text)")
    ap.add_argument("--no-minimal", action="store_true", help="compile the parts without -minimal (the "
                    "backend adds it for NVRTC 12.4 and later)")
    args = ap.parse_args()
    found, why = nvrtc_check.find_nvrtc()
    if not found:
        print(f"SKIP: {why}")
        return nvrtc_check.SKIP
    lib, include = found
    counts: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="prelude-parts-") as tmp:
        work = Path(tmp)
        helper = build_helper(work)
        for src_path in args.sources:
            source, defines = load(src_path)
            metal = work / "k.metal"
            metal.write_text(source)
            tr = subprocess.run([args.translate_main, "--target", "cuda", *defines, str(metal)],
                                capture_output=True, text=True)
            if tr.returncode != 0:
                counts["untranslated"] = counts.get("untranslated", 0) + 1
                continue
            cu = work / "k.cu"
            cu.write_text(tr.stdout)
            options = subprocess.run([str(helper), str(cu)], capture_output=True, text=True, check=True).stdout.split()
            if options and not args.no_minimal:
                options.append("-minimal")
            parts = [o[len("-DMETALCALL_PART_"):-2] for o in options if o.startswith("-DMETALCALL_PART_")]
            ptx_parts, ptx_full = [], []
            ok_p, log_p, t_p = nvrtc_check.compile_cuda(tr.stdout, args.arch, lib, include, ptx=ptx_parts,
                                                        extra=options)
            ok_f, _, t_f = nvrtc_check.compile_cuda(tr.stdout, args.arch, lib, include, ptx=ptx_full)
            if ok_p and ok_f:
                verdict = "same" if code_of(ptx_parts[0]) == code_of(ptx_full[0]) else "DIFFERENT"
            else:
                verdict = "MISSED" if ok_f else "neither"
            counts[verdict] = counts.get(verdict, 0) + 1
            print(f"{verdict:9s} {t_p * 1e3:6.0f} ms / whole {t_f * 1e3:6.0f} ms  {','.join(parts) or '-':40s} {src_path.name}")
            if verdict == "MISSED":
                print("    " + "\n    ".join(l for l in log_p.splitlines() if ": error" in l)[:600])
    print("summary:", ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return 1 if counts.get("DIFFERENT") else 0


if __name__ == "__main__":
    sys.exit(main())
