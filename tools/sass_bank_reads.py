#!/usr/bin/env python3
"""How a CUDA translation's hot loops read the register file's two banks (docs/design.md,
"Stopping kernels", the register banks): compiles FILE.cu (translate_main --target cuda) with
NVRTC as the backend does (tools/nvrtc_check.py, an sm_90 cubin, fast math as the default
compile), disassembles it with cuobjdump and prints, for each innermost loop of each entry point
with at least --min FP instructions, the register reads of its FFMA/FMUL/FADD from even and odd
registers (.reuse operands left out). A pass of the loop takes about max(even, odd) reads' time:
96/94 runs at full rate, 124/68 about 25-30% slower (the FMA loop on the H200, 2026-12-03).

    python tools/sass_bank_reads.py FILE.cu [--arch sm_90] [--min 32] [--precise-math]

Exit status 77 when NVRTC or cuobjdump is missing (pip: nvidia-cuda-nvrtc, nvidia-cuda-cuobjdump)."""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nvrtc_check  # noqa: E402


def cuobjdump() -> str | None:
    found = shutil.which("cuobjdump")
    if found:
        return found
    for d in nvrtc_check.site_dirs():
        for path in glob.glob(os.path.join(d, "nvidia", "*", "bin", "cuobjdump")):
            return path
    return None


def innermost_loops(sass: str, min_fp: int):
    """(entry point, loop start, even reads, odd reads) per innermost loop with min_fp FP instructions."""
    for func in re.split(r"\n\s*Function : ", sass)[1:]:
        name = func.split("\n", 1)[0].strip()
        rows = [(int(a, 16), " ".join(i.split())) for a, i in re.findall(r"/\*([0-9a-f]{4,})\*/\s+([^;]*;)", func)]
        back = [(int(m.group(1), 16), a) for a, i in rows for m in [re.match(r"@!?U?P\d BRA 0x([0-9a-f]+)", i)]
                if m and int(m.group(1), 16) < a]
        inner = [(s, e) for s, e in back if not any(s <= s2 and e2 < e and (s2, e2) != (s, e) for s2, e2 in back)]
        for start, end in inner:
            even = odd = fp = 0
            for address, ins in rows:
                m = re.match(r"(FFMA|FMUL|FADD)\S* R\d+, (.*) ;", ins) if start <= address <= end else None
                if not m:
                    continue
                fp += 1
                for operand in m.group(2).split(", "):
                    r = re.match(r"-?\|?R(\d+)(\.reuse)?", operand.strip())
                    if r and not r.group(2):
                        odd, even = (odd + 1, even) if int(r.group(1)) % 2 else (odd, even + 1)
            if fp >= min_fp:
                yield name, start, even, odd


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--min", type=int, default=32, help="FP instructions a loop needs to be listed (default 32)")
    ap.add_argument("--precise-math", action="store_true", help="compile as fast_math=False does (--fmad=false)")
    args = ap.parse_args()
    found, why = nvrtc_check.find_nvrtc()
    tool = cuobjdump()
    if not found or not tool:
        print(why or "no cuobjdump (pip install nvidia-cuda-cuobjdump)")
        return nvrtc_check.SKIP
    code = open(args.file).read()
    fast = [] if args.precise_math else ["--fmad=true", "-DMETALCALL_FAST_MATH=1"]
    if fast:  # the default compile's fast math replaces nvrtc_check's --fmad=false
        nvrtc_check.BACKEND_OPTIONS[:] = [o for o in nvrtc_check.BACKEND_OPTIONS if not o.startswith("--fmad")]
    cubin: list = []
    ok, log, _ = nvrtc_check.compile_cuda(code, args.arch, *found, extra=fast, cubin=cubin)
    if not ok:
        print(log)
        return 1
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.cubin")
        with open(path, "wb") as f:
            f.write(cubin[0])
        sass = subprocess.run([tool, "-sass", path], capture_output=True, text=True).stdout
    for name, start, even, odd in innermost_loops(sass, args.min):
        print(f"{name} loop at {start:#x}: reads even {even} odd {odd} (max/mean {max(even, odd) / ((even + odd) / 2):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
