"""Command line of the MSL fuzzer: `python -m tools.msl_fuzz <command>` from the repository root.

  run       programs [start, start + count) of a seed on one or more devices; a JSON report
  campaign  many programs in parallel worker processes, each with a timeout; a folder with
            summary.json, the failing programs' sources and the workers' reports
  show      one program's source and the model's expected outputs
  shrink    one failing program reduced to a small one that fails the same way
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter, defaultdict

from . import workarounds
from .printer import program_source
from .programs import GENERATOR_ERRORS, generate


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def has_constants(g) -> bool:
    return any(x.function_constant is not None for x in g.program.globals)


def generate_range(seed: int, start: int, count: int, category: str | None) -> list:
    return [generate(seed, i, category) for i in range(start, start + count)]


def summarise(outcomes: list, programs: int, devices: list) -> dict:
    results = {d: Counter() for d in devices}
    by_category: dict = {d: defaultdict(Counter) for d in devices}
    schedules = {d: Counter() for d in devices}
    for o in outcomes:
        results[o.device][o.status] += 1
        by_category[o.device][o.category][o.status] += 1
        schedules[o.device][str(o.schedule)] += 1
    return {
        "programs": programs,
        "results": {d: dict(c) for d, c in results.items()},
        "schedules": {d: dict(c) for d, c in schedules.items()},
        "by_category": {d: {k: dict(v) for k, v in cats.items()} for d, cats in by_category.items()},
    }


def command_run(args) -> int:
    from .runner import Clock, open_device, run_batch

    started = time.monotonic()
    clock = Clock()
    devices = []
    for name in args.device:
        with clock.phase(f"{name}:open"):
            devices.append((name, open_device(name)))
    outcomes, skipped, done, with_constants = [], [], 0, 0

    def report(complete: bool) -> dict:
        r = {"seed": args.seed, "start": args.start, "count": args.count, "devices": args.device,
             "complete": complete, "generator_errors": len(GENERATOR_ERRORS),
             "workarounds": sorted(workarounds.ACTIVE), "skipped_with_constants": skipped,
             "with_constants": with_constants, "seconds_by_phase": clock.report()}
        r.update(summarise(outcomes, done, args.device))
        r["findings"] = [o.as_dict() for o in outcomes if o.status != "ok"]
        r["seconds"] = round(time.monotonic() - started, 1)
        if args.out:  # after every batch: a campaign that stops this process keeps what it did
            with open(args.out + ".part", "w") as f:
                json.dump(r, f, indent=1)
            os.replace(args.out + ".part", args.out)
        return r

    # batch by batch, each on every device, so that a report holds whole programs
    for first in range(args.start, args.start + args.count, args.batch):
        with clock.phase("generate"):
            gens = generate_range(args.seed, first, min(args.batch, args.start + args.count - first), args.category)
        if args.constants_every > 1:  # a program with function constants is a build of its own
            skipped += [g.index for g in gens if has_constants(g) and g.index % args.constants_every]
            gens = [g for g in gens if not has_constants(g) or g.index % args.constants_every == 0]
        for name, device in devices:
            outcomes += run_batch(device, name, gens, log=log, clock=clock)
        done += len(gens)
        with_constants += sum(1 for g in gens if has_constants(g))
        if first + args.batch < args.start + args.count:
            report(False)
    final = report(True)
    failures = len(final["findings"])
    log(f"seed {args.seed} [{args.start}, {args.start + args.count}): {done} programs on "
        f"{', '.join(args.device)}: {failures} failing, {final['seconds']} s")
    if not args.out:
        print(json.dumps(final, indent=1))
    return 1 if failures else 0


def command_show(args) -> int:
    g = generate(args.seed, args.index, args.category)
    print(f"// seed {args.seed} index {args.index}: {g.program.category}, {g.program.threads} threads, "
          f"threadgroups of {g.program.group}")
    print(program_source(g.program))
    for b in g.program.buffers:
        if b.role in ("out", "atomic"):
            value = g.expected[b.name]
            if isinstance(value, dict):  # a struct buffer
                value = {k: v[:4].tolist() for k, v in value.items()}
            else:
                value = value[:8].tolist()
            print(f"// expected {b.name}: {value} ...")
    return 0


def command_shrink(args) -> int:
    from .reduce import shrink, size
    from .runner import open_device, run_batch

    g = generate(args.seed, args.index, args.category)
    device = open_device(args.device)
    first = run_batch(device, args.device, [g])[0]
    if first.status == "ok":
        log("the program passes on this device: nothing to shrink")
        return 0
    small = shrink(g, device, args.device, first.status, log=log, seconds=args.seconds)
    outcome = run_batch(device, args.device, [small])[0]
    text = (f"// seed {args.seed} index {args.index} on {args.device}: {outcome.status}, "
            f"{size(g.program)} -> {size(small.program)} nodes\n"
            + "".join(f"// {line}\n" for line in outcome.detail.splitlines()) + program_source(small.program))
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    print(text)
    return 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.msl_fuzz", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-workarounds", action="store_true",
                        help="generate the constructs workarounds.py steers around (to check their fixes)")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run programs of one seed on devices")
    run.add_argument("--seed", type=int, required=True)
    run.add_argument("--start", type=int, default=0)
    run.add_argument("--count", type=int, default=100)
    run.add_argument("--device", action="append",
                     help="cpu, cpu-checked, cuda, metal (macOS), metal-sim (the Metal simulator); cpu-fibers, cpu-checked-fibers: barrier regions off; nvrtc: the CUDA translation compiled by NVRTC, not run (no GPU needed; compile errors only) (repeatable)")
    run.add_argument("--batch", type=int, default=40, help="programs per library")
    run.add_argument("--category", help="only programs of this category")
    run.add_argument("--out", help="the JSON report (else printed)")
    run.add_argument("--constants-every", type=int, default=1,
                     help="run only every k-th program with function constants (each is a build of its own)")

    show = sub.add_parser("show", help="print one program and its expected outputs")
    for p in (show,):
        p.add_argument("--seed", type=int, required=True)
        p.add_argument("--index", type=int, required=True)
        p.add_argument("--category")

    shrink = sub.add_parser("shrink", help="reduce one failing program")
    shrink.add_argument("--seed", type=int, required=True)
    shrink.add_argument("--index", type=int, required=True)
    shrink.add_argument("--category")
    shrink.add_argument("--device", default="cpu")
    shrink.add_argument("--seconds", type=float, default=None,
                        help="start no new round after this many seconds (the smallest so far is kept)")
    shrink.add_argument("--out")

    from .campaign import add_arguments, command_campaign

    campaign = sub.add_parser("campaign", help="many programs in parallel workers, with timeouts")
    add_arguments(campaign)

    args = parser.parse_args(argv)
    if args.no_workarounds:
        workarounds.disable_all()
    if args.command == "run":
        args.device = args.device or ["cpu"]
        return command_run(args)
    if args.command == "show":
        return command_show(args)
    if args.command == "shrink":
        return command_shrink(args)
    return command_campaign(args)
