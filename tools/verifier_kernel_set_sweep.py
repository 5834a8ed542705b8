#!/usr/bin/env python3
"""The translation verifier over the conformance suite's kernel sets (tests/conformance): each
module's KernelSet, translated plain and checked with its own defines=, verified as a cold
compile verifies it (the precompiled header of its head). Prints every refusal and the count;
a refusal of valid MSL would fail that set's kernels wherever the check is on. Clang's own
errors ("Clang: ...") are listed apart: a verified compile checks only what the host compiler
built, so where the host compiler refuses the same code (checked mode's cs_pointer_bits in
test_cuda_survey_constructs) its own error is raised. Needs libclang.

    python tools/verifier_kernel_set_sweep.py [test_module ...]
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path

import metalcall
from metalcall import _core

CONFORMANCE = Path(__file__).resolve().parents[1] / "tests" / "conformance"


def main(modules: list[str]) -> int:
    sys.path[:0] = [str(CONFORMANCE), str(CONFORMANCE.parent)]
    import mcconf  # the suite's KernelSet

    modules = modules or sorted(p.stem for p in CONFORMANCE.glob("test_*.py"))
    count = 0
    refused, clang_errors = [], []
    start = time.perf_counter()
    for module in modules:
        for name, kernels in vars(importlib.import_module(module)).items():
            if not isinstance(kernels, mcconf.KernelSet):
                continue
            for checked in (False, True):
                try:
                    code = _core._cpu_translation(kernels.source(), checked, kernels.defines)
                except metalcall.Error:  # refused by the front end: nothing to verify
                    continue
                count += 1
                problems, _ = _core._verify_cpu_translation_details(code)
                if problems:
                    where = clang_errors if all(p.startswith("Clang: ") for p in problems) else refused
                    where.append((f"{module}.{name}", "checked" if checked else "plain", problems[:3]))
    print(f"{count} translations: {count - len(refused) - len(clang_errors)} verified, {len(refused)} refused by the "
          f"checks, {len(clang_errors)} by Clang itself ({time.perf_counter() - start:.0f} s)")
    for label, items in (("REFUSED", refused), ("CLANG", clang_errors)):
        for what, mode, problems in items:
            print(f"{label} {what} ({mode}):", *problems, sep="\n    ")
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
