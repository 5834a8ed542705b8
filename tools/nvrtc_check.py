#!/usr/bin/env python3
"""Compiles a CUDA translation (translate_main --target cuda, cpp/tests/translate) with NVRTC,
as the CUDA backend compiles it, and prints NVRTC's log: no GPU needed.

    python tools/nvrtc_check.py FILE.cu [--arch sm_90] [--syntax-only] [--quiet]

The options are the backend's (cpp/src/backends/cuda/cuda_compiler.cpp, Nvrtc::build: keep
them in step) and the prelude headers (cpp/src/msl/prelude/*.h) are handed to NVRTC as the
backend embeds them. libnvrtc: $NVRTC_LIBRARY, else pip's nvidia-cuda-nvrtc (nvidia/cu13 or
nvidia/cuda_nvrtc under any site-packages of this Python or $NVRTC_SITE_PACKAGES); the CUDA
headers (cuda_fp16.h): $CUDA_INCLUDE, else next to that library, else /usr/local/cuda*/include.
Exit status: 0 compiled, 1 NVRTC reported errors, 77 no NVRTC or no CUDA headers (skip).
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import os
import site
import sys
import sysconfig
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRELUDE = ROOT / "cpp" / "src" / "msl" / "prelude"
# Nvrtc::build's options, less the -I of the CUDA headers (added below) and -DMETALCALL_NO_RESTRICT.
BACKEND_OPTIONS = ["-default-device", "--std=c++17", "-diag-suppress=1097,177,550,186", "--fmad=false"]
SKIP = 77


def site_dirs():
    dirs = [os.environ.get("NVRTC_SITE_PACKAGES", "")]
    dirs += [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    try:
        dirs += site.getsitepackages()
    except AttributeError:
        pass
    dirs += glob.glob("/work/venv-*/lib/python3*/site-packages")  # the development VM's other venvs
    return [d for d in dict.fromkeys(dirs) if d]


def find_nvrtc():
    """(libnvrtc path, CUDA include folder) or (None, reason)."""
    lib = os.environ.get("NVRTC_LIBRARY")
    if not lib:
        for d in site_dirs():
            found = sorted(p for p in glob.glob(os.path.join(d, "nvidia", "*", "lib", "libnvrtc.so*"))
                           if ".alt." not in p and "builtins" not in p)
            if found:
                lib = found[-1]
                break
    if not lib or not os.path.exists(lib):
        return None, "no libnvrtc (set NVRTC_LIBRARY, or pip install nvidia-cuda-nvrtc)"
    include = os.environ.get("CUDA_INCLUDE")
    if not include:
        cands = [Path(lib).parent.parent / "include", Path(lib).parent.parent.parent / "cuda_runtime" / "include"]
        cands += [Path(p) for p in ["/usr/local/cuda/include", *sorted(glob.glob("/usr/local/cuda-*/include"), reverse=True)]]
        for cand in cands:
            if (cand / "cuda_fp16.h").exists():
                include = str(cand)
                break
    if not include or not (Path(include) / "cuda_fp16.h").exists():
        return None, "no CUDA headers with cuda_fp16.h (set CUDA_INCLUDE, or pip install nvidia-cuda-runtime)"
    return (lib, include), None


def compile_cuda(code: str, arch: str, nvrtc_lib: str, include: str, syntax_only: bool = False, ptx: list | None = None,
                 extra: list | None = None, cubin: list | None = None):
    """(ok, log, seconds). syntax_only: NVRTC's front end only (-fdevice-syntax-only); ptx: a
    list that gets the PTX appended (a compute_XX arch); extra: more options (the prelude parts'
    -D options, tools/cuda_prelude_parts_check.py; without them the whole prelude); cubin: a
    list that gets the cubin's bytes appended (an sm_XX arch)."""
    # NVRTC dlopens its builtins library by name; a pip wheel's folder is not on the search path.
    for builtins in sorted(glob.glob(os.path.join(os.path.dirname(nvrtc_lib), "libnvrtc-builtins.so*"))):
        if ".alt." not in builtins:
            ctypes.CDLL(builtins, mode=ctypes.RTLD_GLOBAL)
    nvrtc = ctypes.CDLL(nvrtc_lib)
    headers = sorted(PRELUDE.glob("*.h"))
    names = (ctypes.c_char_p * len(headers))(*[h.name.encode() for h in headers])
    texts = (ctypes.c_char_p * len(headers))(*[h.read_bytes() for h in headers])
    prog = ctypes.c_void_p()
    r = nvrtc.nvrtcCreateProgram(ctypes.byref(prog), code.encode(), b"metalcall_kernel.cu", len(headers), texts, names)
    if r != 0:
        raise RuntimeError(f"nvrtcCreateProgram failed ({r})")
    opts = BACKEND_OPTIONS + [f"-arch={arch}", f"-I{include}"] + (["-fdevice-syntax-only"] if syntax_only else [])
    opts += list(extra or [])
    argv = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    t0 = time.perf_counter()
    r = nvrtc.nvrtcCompileProgram(prog, len(opts), argv)
    seconds = time.perf_counter() - t0
    size = ctypes.c_size_t()
    nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    nvrtc.nvrtcGetProgramLog(prog, log)
    if ptx is not None and r == 0:
        nvrtc.nvrtcGetPTXSize(prog, ctypes.byref(size))
        text = ctypes.create_string_buffer(size.value)
        nvrtc.nvrtcGetPTX(prog, text)
        ptx.append(text.value.decode(errors="replace"))
    if cubin is not None and r == 0:
        nvrtc.nvrtcGetCUBINSize(prog, ctypes.byref(size))
        data = ctypes.create_string_buffer(size.value)
        nvrtc.nvrtcGetCUBIN(prog, data)
        cubin.append(data.raw)
    nvrtc.nvrtcDestroyProgram(ctypes.byref(prog))
    return r == 0, log.value.decode(errors="replace").strip(), seconds


class NvrtcDevice:
    """A stand-in for mc.Device("cuda") without a GPU, for tools/msl_corpus_survey.py's
    `--device nvrtc`: compile() translates with translate_main and compiles the result with
    NVRTC's front end (syntax only), raising mc.CompileError at the first source.metal line
    NVRTC names (its own line or the user code an instantiation came from). An sm_XX arch
    compiles the whole way to a cubin instead (NVVM and ptxas: their errors too, as on a GPU)."""

    backend = "nvrtc"

    def __init__(self, translate_main: str, arch: str = "compute_90"):
        found, why = find_nvrtc()
        if not found:
            raise SystemExit(f"--device nvrtc: {why}")
        self.lib, self.include = found
        self.exe, self.arch = translate_main, arch

    def compile(self, source: str, **options):  # options (fast_math, defines) are the backends': NVRTC's here are fixed
        import re
        import subprocess
        import tempfile

        import metalcall as mc

        with tempfile.NamedTemporaryFile("w", suffix=".metal", delete=False) as f:
            f.write(source)
        try:
            r = subprocess.run([self.exe, "--target", "cuda", f.name], capture_output=True, text=True)
        finally:
            os.unlink(f.name)
        if r.returncode != 0:
            e = mc.CompileError(r.stderr.strip().splitlines()[0] if r.stderr.strip() else "translation failed")
            m = re.search(r"source\.metal:(\d+):", r.stderr)
            e.line = int(m.group(1)) if m else None
            raise e
        ok, log, _ = compile_cuda(r.stdout, self.arch, self.lib, self.include,
                                  syntax_only=self.arch.startswith("compute_"))
        if ok:
            return _NvrtcLibrary()
        first = next((l for l in log.splitlines() if ": error" in l), "NVRTC failed")
        m = re.search(r"source\.metal\((\d+)\)|at line (\d+) of source\.metal", log)
        line = int(m.group(1) or m.group(2)) if m else None
        e = mc.CompileError(re.sub(r"^source\.metal\((\d+)\): ", r"source.metal:\1:1: ", first))
        e.line = line
        e.log = log
        raise e


class _NvrtcLibrary:
    function_names: list = []  # the whole translation was compiled: nothing waits for a specialisation


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", help="CUDA C++ from translate_main --target cuda ('-': standard input)")
    ap.add_argument("--arch", default="sm_90", help="NVRTC -arch (default sm_90, a cubin as on the H100; "
                    "compute_90 stops at PTX, faster)")
    ap.add_argument("--syntax-only", action="store_true", help="stop after NVRTC's front end (-fdevice-syntax-only): "
                    "every C++ error, none of the optimizer's or ptxas's, in seconds where a whole MLX file takes minutes")
    ap.add_argument("--quiet", action="store_true", help="print only the result line and the errors")
    args = ap.parse_args()
    found, why = find_nvrtc()
    if not found:
        print(f"SKIP: {why}")
        return SKIP
    lib, include = found
    code = sys.stdin.read() if args.file == "-" else Path(args.file).read_text()
    ok, log, seconds = compile_cuda(code, args.arch, lib, include, args.syntax_only)
    if log:
        lines = log.splitlines()
        if args.quiet:
            lines = [l for l in lines if ": error" in l or "catastrophic" in l or "errors detected" in l]
        print("\n".join(lines))
    mode = ", syntax only" if args.syntax_only else ""
    print(f"{'OK' if ok else 'FAILED'}: {args.file} ({args.arch}{mode}, {Path(lib).name}, {seconds:.1f} s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
