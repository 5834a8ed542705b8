"""Running generated programs on a metalcall device and comparing with the model.

Programs are compiled many to a library (the CPU backend's C++ compile costs ~1 s
whatever the size, so one library per batch amortises it); when a library does not
compile, the programs its errors name fail (compile_errors.py) and the rest compile again
together, and where the errors name none the library is split in halves.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from . import structs, tree as t
from .compile_errors import attribute
from .printer import library_source, program_source
from .programs import Generated
from .types import BFLOAT, Struct, Vec, elem
from .values import from_storage, is_exact_match, to_storage


@dataclass
class Outcome:
    """What one program did on one device."""

    name: str
    seed: int
    index: int
    category: str
    device: str
    status: str  # "ok", "mismatch", "compile_error", "execution_error"
    detail: str = ""
    source: str = ""
    features: list = field(default_factory=list)
    schedule: str | None = None  # Kernel.thread_schedule: "loop", "regions", "fibers" (None: not run)

    def as_dict(self) -> dict:
        return dict(vars(self))


FIBERS = "-fibers"  # a device name's suffix: the CPU's barrier regions off (METALCALL_BARRIER_REGIONS=0)


def defines_for(spec: str) -> dict | None:
    return {"METALCALL_BARRIER_REGIONS": "0"} if spec.endswith(FIBERS) else None


# `--device nvrtc`: the CUDA translation of each library compiled by NVRTC's front end, no GPU
# needed and nothing run (a program that compiles counts as ok): compile errors only.
# translate_main: $TRANSLATE_MAIN, else cpp/tests/translate/run.sh's default build folder.
NVRTC = "nvrtc"


def open_device(spec: str):
    import metalcall as mc

    spec = spec.removesuffix(FIBERS)
    if spec == "cpu-checked":
        return mc.Device("cpu", checked=True)
    if spec == NVRTC:
        from ..nvrtc_check import NvrtcDevice  # tools/nvrtc_check.py

        exe = os.environ.get("TRANSLATE_MAIN", "/tmp/translate-main-work/translate_main")
        if not os.path.exists(exe):
            raise SystemExit(f"--device nvrtc: no translate_main at {exe} (build it with "
                             "`bash cpp/tests/translate/run.sh`, or set TRANSLATE_MAIN)")
        return NvrtcDevice(exe)
    return mc.Device(spec)


def aligned_empty(shape, dtype, alignment: int = 64) -> np.ndarray:
    """A zeroed array whose data starts on an `alignment`-byte boundary (ulong4 needs 32)."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    raw = np.zeros(nbytes + alignment, dtype=np.uint8)
    start = (-raw.ctypes.data) % alignment
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def storage_array(buffer: t.Buffer, value) -> np.ndarray:
    """The bytes a kernel parameter reads: 3-vectors padded to 4 unless packed, structs laid
    out as MSL lays them out."""
    if isinstance(buffer.ty, Struct):
        raw = structs.pack(buffer.ty, value, buffer.length)
        out = aligned_empty(raw.shape, np.uint8)
        out[...] = raw
        return out
    data = to_storage(value, buffer.ty)
    if isinstance(buffer.ty, Vec) and buffer.ty.n == 3 and not buffer.packed:
        out = aligned_empty((buffer.length, 4), data.dtype)
        out[:, :3] = data
    else:
        out = aligned_empty(data.shape, data.dtype)
        out[...] = data
    return out


def argument(buffer: t.Buffer, data: np.ndarray):
    """A scalar buffer binds as its NumPy type; vectors, bfloat and atomics as raw bytes;
    a `constant T&` parameter as a NumPy scalar."""
    if buffer.role == "scalar":
        return data.reshape(-1)[0]
    if isinstance(buffer.ty, (Vec, Struct)) or elem(buffer.ty) == BFLOAT or buffer.role == "atomic":
        return data.view(np.uint8)
    return data


def compare(gen: Generated, buffer: t.Buffer, got_storage: np.ndarray) -> str:
    """'' when the device's buffer equals the model's, else a description."""
    if isinstance(buffer.ty, Struct):
        return compare_structs(gen, buffer, got_storage)
    got = got_storage
    if isinstance(buffer.ty, Vec):
        got = got_storage.reshape(buffer.length, -1)[:, :buffer.ty.n]
    got_values = from_storage(got, buffer.ty)
    expected = gen.expected[buffer.name]
    same = is_exact_match(expected, got_values, buffer.ty)
    if same.all():
        return ""
    bad = np.argwhere(~same)
    rows = sorted({int(i[0]) for i in bad})
    lines = [f"{buffer.name}: {len(rows)} of {buffer.length} elements differ"]
    for r in rows[:4]:
        lines.append(f"  [{r}] expected {format_value(expected[r], buffer.ty)} got {format_value(got_values[r], buffer.ty)}")
    return "\n".join(lines)


def compare_structs(gen: Generated, buffer: t.Buffer, raw: np.ndarray) -> str:
    expected = gen.expected[buffer.name]
    got = structs.unpack(buffer.ty, raw, buffer.length)
    bad = np.nonzero(structs.differences(buffer.ty, expected, got))[0]
    if len(bad) == 0:
        return ""
    lines = [f"{buffer.name}: {len(bad)} of {buffer.length} structs differ"]
    for r in bad[:4]:
        for name, ty, _ in buffer.ty.fields:
            lines.append(f"  [{r}].{name} expected {format_value(expected[name][r], ty)} got {format_value(got[name][r], ty)}")
    return "\n".join(lines)


def format_value(v, ty) -> str:
    if isinstance(v, np.ndarray):
        return "(" + ", ".join(format_value(x, elem(ty)) for x in v) + ")"
    if elem(ty).is_float:
        return repr(float(v))
    return repr(int(v) if not isinstance(v, (bool, np.bool_)) else bool(v))


class Clock:
    """Seconds by phase, summed over programs: wall time, and CPU time with the compilers a
    phase waits for (where a campaign's time goes)."""

    def __init__(self):
        self.wall: dict = {}
        self.cpu: dict = {}

    @staticmethod
    def _cpu() -> float:
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system

    @contextmanager
    def phase(self, name: str):
        wall, cpu = time.monotonic(), self._cpu()
        try:
            yield
        finally:
            self.wall[name] = self.wall.get(name, 0.0) + time.monotonic() - wall
            self.cpu[name] = self.cpu.get(name, 0.0) + self._cpu() - cpu

    def report(self) -> dict:
        return {"wall": {k: round(v, 2) for k, v in self.wall.items()},
                "cpu": {k: round(v, 2) for k, v in self.cpu.items()}}


def run_program(lib, gen: Generated, device_name: str, clock: Clock | None = None, errors: dict | None = None) -> Outcome:
    clock = clock or Clock()
    prog = gen.program
    outcome = Outcome(prog.name, gen.seed, gen.index, prog.category, device_name, "ok",
                      features=sorted(prog.features))
    arrays = [storage_array(b, b.data) for b in prog.buffers]
    args = [argument(b, a) for b, a in zip(prog.buffers, arrays)]
    shared = [a for a in prog.shared if a.as_param]
    tg_bytes = [((a.length * _element_bytes(a.ty)) + 15) // 16 * 16 for a in shared]
    trace = os.environ.get("MSL_FUZZ_TRACE")
    if trace:  # the program about to run, for a crash that takes the process down
        with open(trace, "w") as f:
            f.write(f"// {device_name}\n" + program_source(prog))
    try:
        constants = {g.name: g.value for g in prog.globals if g.function_constant is not None}
        # a kernel with function constants is built on its own here (a per-kernel build)
        with clock.phase(f"{device_name}:specialise" if constants else f"{device_name}:lookup"):
            kernel = lib.function(prog.name, constants=constants) if constants else lib.function(prog.name)
        outcome.schedule = getattr(kernel, "thread_schedule", None)
        with clock.phase(f"{device_name}:run"):
            call = kernel(prog.threads, *args, threadgroup=prog.group,
                          threadgroup_memory=tg_bytes if tg_bytes else None)
            if call is not None:
                call.wait()
    except Exception as exc:  # any failure of one program is a finding, not the end
        if errors is not None:
            errors[prog.name] = exc
        outcome.status = "execution_error"
        outcome.detail = f"{type(exc).__name__}: {exc}"
        outcome.source = program_source(prog)
        return outcome
    problems = [compare(gen, b, a) for b, a in zip(prog.buffers, arrays) if b.role in ("out", "atomic")]
    problems = [p for p in problems if p]
    if problems:
        outcome.status = "mismatch"
        outcome.detail = "\n".join(problems)
        outcome.source = program_source(prog)
    return outcome


def _element_bytes(ty) -> int:
    if isinstance(ty, Vec):
        return elem(ty).size * ty.padded
    return ty.size


def compile_library(device, programs: list, defines: dict | None = None):
    return device.compile(library_source([g.program for g in programs]), fast_math=False, defines=defines)


def run_batch(device, device_name: str, programs: list, log=None, clock: Clock | None = None) -> list[Outcome]:
    """Every program of the batch on one device; compile failures are isolated."""
    clock = clock or Clock()
    outcomes: list[Outcome] = []
    pending = [programs]
    while pending:
        group = pending.pop()
        try:
            with clock.phase(f"{device_name}:compile"):
                lib = compile_library(device, group, defines_for(device_name))
        except Exception as exc:
            failed, again = compile_failures(exc, group, group, device_name)
            outcomes += failed
            pending += again
            continue
        if device_name == NVRTC:  # compiled: nothing to run
            outcomes += [Outcome(g.program.name, g.seed, g.index, g.program.category, device_name, "ok",
                                 features=sorted(g.program.features)) for g in group]
            continue
        results = []
        errors: dict = {}
        for g in group:
            started = time.monotonic()
            results.append(run_program(lib, g, device_name, clock, errors))
            if log and time.monotonic() - started > 5:
                log(f"{g.program.name} took {time.monotonic() - started:.1f} s on {device_name}")
        # A library with function constants builds when a kernel is first asked for: one
        # program's compile error then fails them all; those its errors name are isolated.
        deferred = [g for g, o in zip(group, results) if o.detail.startswith("CompileError")]
        if len(group) > 1 and deferred:
            results = [o for g, o in zip(group, results) if g not in deferred]
            failed, again = compile_failures(errors[deferred[0].program.name], group, deferred, device_name)
            results += failed
            pending += again if failed else [[g] for g in deferred]
        outcomes += results
    return outcomes


def compile_failures(exc: Exception, group: list, suspects: list, device_name: str) -> tuple[list, list]:
    """(the compile_error outcomes of the suspects that `exc`, the error of the library of
    `group`, names; the groups to compile again): the other suspects together, or halves of
    them where it names none."""
    failed = attribute(exc, group) if len(group) > 1 else {0: f"{type(exc).__name__}: {exc}"}
    named = {id(group[k]): detail for k, detail in failed.items() if group[k] in suspects}
    if not named:
        half = len(suspects) // 2
        return [], [s for s in (suspects[:half], suspects[half:]) if s]
    outcomes = [Outcome(g.program.name, g.seed, g.index, g.program.category, device_name, "compile_error",
                        named[id(g)], program_source(g.program), sorted(g.program.features))
                for g in suspects if id(g) in named]
    rest = [g for g in suspects if id(g) not in named]
    return outcomes, [rest] if rest else []
