"""How NVRTC compiles bench_stop_checks.py's loop kernels with their stop checks and without:
the CUDA C++ the backend hands NVRTC (METALCALL_CUDA_DUMP_DIR), compiled again to PTX with the
backend's options (tools/nvrtc_check.py), then to SASS where ptxas and cuobjdump are found; per
kernel the float multiplies (the FMA loop's unrolling shows as more of them per branch),
branches and calls. Run from the repository root; `--files A.cu B.cu` analyses given files."""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, "tools")
sys.path.insert(0, "benchmarks")
import nvrtc_check  # noqa: E402


def counts(text, ops):
    return {op: len(re.findall(rf"^\s*(?:@%?!?\w+\s+)?{re.escape(op)}", text, re.M)) for op in ops}


def analyse(label, code):
    found, why = nvrtc_check.find_nvrtc()
    if not found:
        print("no NVRTC:", why)
        return
    ptx = []
    ok, log, seconds = nvrtc_check.compile_cuda(code, "compute_90", *found, ptx=ptx)
    if not ok:
        print(label, "NVRTC failed\n", log[:3000])
        return
    for entry in re.split(r"\.entry\s+", ptx[0])[1:]:
        name = entry.split("(", 1)[0]
        kernel = next((k for k in ("heavy_loop", "mul_loop") if k in name), name[:40])
        c = counts(entry, ["mul.f32", "mul.rn.f32", "add.f32", "add.rn.f32", "bra", "call", "ld.volatile"])
        print(f"PTX  {label:10s} {kernel:12s} " + " ".join(f"{k} {v}" for k, v in c.items()))
    if shutil.which("ptxas") and shutil.which("cuobjdump"):
        with tempfile.TemporaryDirectory() as d:
            open(f"{d}/k.ptx", "w").write(ptx[0])
            r = subprocess.run(["ptxas", "-arch=sm_90", "-O3", f"{d}/k.ptx", "-o", f"{d}/k.cubin"], capture_output=True,
                               text=True)
            if r.returncode:
                print("ptxas failed", r.stderr[:500])
                return
            sass = subprocess.run(["cuobjdump", "-sass", f"{d}/k.cubin"], capture_output=True, text=True).stdout
            for func in re.split(r"\n\s*Function : ", sass)[1:]:
                name = func.split("\n", 1)[0]
                kernel = next((k for k in ("heavy_loop", "mul_loop") if k in name), name[:40])
                ops = re.findall(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9]*)", func)
                c = {op: sum(1 for o in ops if o == op) for op in ("FMUL", "FFMA", "FADD", "BRA", "CALL", "LDG")}
                print(f"SASS {label:10s} {kernel:12s} " + " ".join(f"{k} {v}" for k, v in c.items()) +
                      f" instructions {len(ops)}")


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--files":
        for f in sys.argv[2:]:
            analyse(os.path.basename(f), open(f).read())
        return
    cache, dump = tempfile.mkdtemp(prefix="p24-cache-"), tempfile.mkdtemp(prefix="p24-dump-")
    os.environ["METALCALL_CACHE_DIR"] = cache
    os.environ["METALCALL_CUDA_DUMP_DIR"] = dump
    import metalcall as mc
    from bench_stop_checks import LOOP_SOURCE, NO_CHECKS

    dev = mc.Device("cuda")
    for label, defines in (("checks", None), ("no checks", NO_CHECKS)):
        before = set(glob.glob(f"{dump}/*.cu"))
        lib = dev.compile(LOOP_SOURCE, defines=defines)
        # False: the strips leave the kernels a plain launch (not whole threadgroups)
        print(label, "threads_synchronise", lib.heavy_loop.threads_synchronise, lib.mul_loop.threads_synchronise)
        for cu in sorted(set(glob.glob(f"{dump}/*.cu")) - before):
            analyse(label, open(cu).read())


if __name__ == "__main__":
    main()
