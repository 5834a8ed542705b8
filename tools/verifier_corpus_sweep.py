#!/usr/bin/env python3
"""The translation verifier over the public MSL corpus (docs/msl-corpus.md): each file that
translates, plain and checked, verified twice, the whole unit and with the precompiled header
of its head; prints how many verdicts agree, how many parses read the header, and every file
whose two verdicts differ (none may: the header only saves time). Needs libclang.

    METALCALL_CORPUS=/path/to/corpus python tools/verifier_corpus_sweep.py
"""

from __future__ import annotations

import os
import sys
import time

import metalcall
from metalcall import _core


def main() -> int:
    root = os.environ.get("METALCALL_CORPUS")
    if not root:
        sys.exit("set METALCALL_CORPUS to the extracted corpus")
    count = same = read_header = 0
    whole_s = header_s = 0.0
    differ = []
    for folder, _, files in sorted(os.walk(root)):
        for name in sorted(f for f in files if f.endswith(".metal")):
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8", errors="replace") as f:
                source = f.read()
            for checked in (False, True):
                try:
                    code = _core._cpu_translation(source, checked)
                except metalcall.Error:  # refused by the front end: nothing to verify
                    continue
                start = time.perf_counter()
                whole = _core._verify_cpu_translation_details(code, False)
                middle = time.perf_counter()
                headed = _core._verify_cpu_translation_details(code)
                whole_s += middle - start
                header_s += time.perf_counter() - middle
                count += 1
                read_header += headed[1]
                if whole[0] == headed[0]:
                    same += 1
                else:
                    differ.append((os.path.relpath(path, root), checked, whole[0][:2], headed[0][:2]))
    print(f"{count} translations (plain and checked): {same} same verdicts, {read_header} read the header; "
          f"whole-unit parses {whole_s:.0f} s, with the header {header_s:.0f} s")
    for d in differ:
        print("DIFFER", d)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
