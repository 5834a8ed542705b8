#!/usr/bin/env python3
"""Checks the CUDA translator's rewrite of conditionals (msl/conditional_literals.hpp) on
conditionals.metal: translate_main writes it for CUDA with METALCALL_COND_ARMS where the
rewrite applies and for the CPU without; with NVRTC (tools/nvrtc_check.py) the CUDA
translation must compile, which checks the file's static_asserts (the types MSL gives).

    check_conditionals.py PATH/TO/translate_main
"""
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent.parent / "tools"))
import nvrtc_check  # noqa: E402

SOURCE = HERE / "conditionals.metal"
# Every conditional of conditionals.metal but the template argument's.
EXPECTED_WRAPS = 12


def translate(exe, target):
    r = subprocess.run([exe, "--target", target, str(SOURCE)], capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stderr)
        raise SystemExit(f"FAIL: translate_main --target {target} failed")
    return r.stdout


def main():
    exe = sys.argv[1]
    failures = []
    cuda, cpu = translate(exe, "cuda"), translate(exe, "cpu")
    body = cuda[cuda.index('#line 1 "source.metal"'):]
    wraps = body.count("METALCALL_COND_ARMS((")
    if wraps != EXPECTED_WRAPS:
        failures.append(f"CUDA: {wraps} conditionals rewritten, expected {EXPECTED_WRAPS}")
    flat = "".join(body.split())
    if "i<2?METALCALL_COND_ARMS((xb->d),(xb->d/16.f));" not in flat:
        failures.append("CUDA: dequantize_q5_K's conditional not rewritten as expected")
    if ":3>h2;" not in flat:
        failures.append("CUDA: the template argument's conditional was rewritten")
    if "METALCALL_COND_ARMS" in cpu:
        failures.append("CPU: a conditional was rewritten (the rewrite is CUDA's only)")
    print(f"translation: {wraps} conditionals rewritten for CUDA, none for the CPU")
    found, why = nvrtc_check.find_nvrtc()
    if not found:
        print(f"SKIP (NVRTC part): {why}")
    else:
        ok, log, seconds = nvrtc_check.compile_cuda(cuda, "compute_90", *found)
        print(f"NVRTC: {'compiled' if ok else 'FAILED'} in {seconds:.1f} s")
        if not ok:
            print(log)
            failures.append("NVRTC could not compile the CUDA translation")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
