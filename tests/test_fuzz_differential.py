"""Differential fuzzing in CI: fixed seeds of tools/msl_fuzz's random MSL kernels, each
compared with the generator's own NumPy model of it, on the CPU backend (unchecked and
checked; region-shaped programs with the barrier regions on and off) and on CUDA where there is one.

A failure shows the smallest failing kernel the reducer finds (it runs the candidates
on the same device), the differing elements and the command that replays it. Each test
is one library of programs (one compile); the GPU machine runs tens of thousands
(`python -m tools.msl_fuzz campaign`, docs/design.md "Differential fuzzing").
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

import metalcall as mc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.msl_fuzz.printer import program_source  # noqa: E402
from tools.msl_fuzz.programs import generate  # noqa: E402
from tools.msl_fuzz.reduce import shrink  # noqa: E402
from tools.msl_fuzz.runner import open_device, run_batch  # noqa: E402

PER_TEST = 40  # programs in one library
REGION_PER_TEST = 20  # of the region-shaped ones (a third of the time the others take)
# (device, seed, number of libraries, category): the seeds are fixed, so CI always runs the same
# programs. "regions": barriers at the top level and in uniform loops, the threads' locals across
# them (tools/msl_fuzz/regions.py), run with the CPU's barrier regions on and off (-fibers).
# Three CPU libraries, not five (2026-12-06): about 13 s of CPU each on the 2-core box, where CI's
# 25 minutes were nearly spent; the campaigns (docs/design.md) run thousands more off CI.
PLAN = [("cpu", 1, 3, None), ("cpu-checked", 2, 2, None), ("cuda", 3, 10, None),
        ("cpu", 22, 1, "regions"), ("cpu-checked", 23, 1, "regions"), ("cpu-fibers", 24, 1, "regions")]
SHRINK_SECONDS = 40  # no shrinking round starts later (CI's pytest-timeout is 100 s a test)


def _cases():
    backends = mc.backends()
    for device, seed, libraries, category in PLAN:
        needed = device.split("-")[0]
        for k in range(libraries):
            marks = [] if needed in backends else [pytest.mark.skip(reason=f"no {needed} backend in this build")]
            per = REGION_PER_TEST if category == "regions" else PER_TEST
            yield pytest.param(device, seed, k * per, category, marks=marks,
                               id=f"{device}-seed{seed}-{k * per}" + (f"-{category}" if category else ""))


def _describe(device_name, device, generated, outcome) -> str:
    started = time.monotonic()
    small = generated
    detail = outcome.detail
    # A compile error names its line already, and shrinking one compiles every candidate that
    # still fails: the replay command shrinks it off-line.
    if outcome.status != "compile_error":
        try:
            import tools.msl_fuzz.reduce as reduce_module

            reduce_module.MAX_ROUNDS = 12
            small = shrink(generated, device, device_name, outcome.status, seconds=SHRINK_SECONDS)
            again = run_batch(device, device_name, [small])[0]
            detail = again.detail if again.status != "ok" else outcome.detail
        except Exception as exc:  # the report must not hide the failure
            detail = f"{outcome.detail}\n(shrinking failed: {exc})"
    return (f"{outcome.status} on {device_name} (program {generated.index} of seed {generated.seed}, "
            f"{outcome.category}); shrunk in {time.monotonic() - started:.0f} s to:\n\n"
            f"{program_source(small.program)}\n{detail}\n\nreplay: python -m tools.msl_fuzz shrink "
            f"--seed {generated.seed} --index {generated.index} --device {device_name}"
            + (" --category regions" if generated.program.category == "regions" else ""))


@pytest.mark.parametrize("device_name,seed,start,category", list(_cases()))
def test_random_kernels_match_the_model(device_name, seed, start, category):
    if device_name == "cuda":
        try:
            device = open_device("cuda")
        except mc.DeviceError as exc:
            pytest.skip(f"no usable CUDA device: {exc}")
    else:
        device = open_device(device_name)
    per = REGION_PER_TEST if category == "regions" else PER_TEST
    programs = [generate(seed, i, category) for i in range(start, start + per)]
    outcomes = run_batch(device, device_name, programs)
    assert len(outcomes) == len(programs)
    if category == "regions":  # the seeds reach the regions (and only with them on)
        regions = sum(o.schedule == "regions" for o in outcomes)
        assert regions == 0 if device_name.endswith("-fibers") else regions >= 5, regions
    failing = [o for o in outcomes if o.status != "ok"]
    if failing:
        first = failing[0]
        generated = next(g for g in programs if g.program.name == first.name)
        names = ", ".join(o.name for o in failing)
        pytest.fail(f"{len(failing)} of {len(programs)} programs failed ({names}); the first, "
                    + _describe(device_name, device, generated, first))
