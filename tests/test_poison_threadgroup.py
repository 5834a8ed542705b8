"""Threadgroup memory is undefined at the start of every threadgroup on Metal. Under
METALCALL_POISON_UNINITIALIZED=1 the CPU devices (plain, checked, sandboxed) fill it with 0xFF
bytes at each group's start, before any thread of the group runs: the kernel's own `threadgroup`
variables (arrays, scalars, structs, atomics) and the [[threadgroup(i)]] parameters' memory; so
does the Metal simulator, which runs the CPU build. Without the variable the CPU keeps what its storage held (zeros,
then the previous group's values), so a kernel that reads what its group did not write shows up
only with it. Each case runs in a fresh interpreter, the variable being read once per process."""

from __future__ import annotations

import sys
import textwrap

import pytest
from mctest import cuda_present

POISON = 0xFFFFFFFF

SNIPPET = textwrap.dedent(
    """
    import sys
    import numpy as np
    import metalcall as mc

    SRC = '''
    #include <metal_stdlib>
    using namespace metal;
    struct Pair { float f; uint u; };
    // Reads every kind of threadgroup variable before its group writes it, then writes them all,
    // so that a group after it on the same worker would see these values if nothing refilled them.
    kernel void read_first(device uint* seen [[buffer(0)]], uint i [[thread_position_in_grid]],
                           uint t [[thread_position_in_threadgroup]]) {
        threadgroup float tile[64];
        threadgroup uint count;
        threadgroup Pair pair;
        threadgroup atomic_uint hits;
        seen[6 * i + 0] = as_type<uint>(tile[t]);
        seen[6 * i + 1] = count;
        seen[6 * i + 2] = as_type<uint>(pair.f);
        seen[6 * i + 3] = pair.u;
        seen[6 * i + 4] = atomic_load_explicit(&hits, memory_order_relaxed);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        tile[t] = float(i);
        if (t == 0) { count = i; pair.f = 1.0f; pair.u = i; atomic_store_explicit(&hits, 7u, memory_order_relaxed); }
        seen[6 * i + 5] = 0u;
    }
    // No barrier (the CPU runs its threads as one loop): each thread reads its own slot, then writes it.
    kernel void read_first_loop(device uint* seen [[buffer(0)]], uint i [[thread_position_in_grid]],
                                uint t [[thread_position_in_threadgroup]]) {
        threadgroup uint slots[64];
        seen[i] = slots[t];
        slots[t] = i;
    }
    // A SIMD-group function in a branch: each thread of the group is a fiber on the CPU (at a
    // region's top level the call would start a region: simd_exchanges.hpp).
    kernel void read_first_fibers(device uint* seen [[buffer(0)]], uint i [[thread_position_in_grid]],
                                  uint t [[thread_position_in_threadgroup]]) {
        threadgroup float lanes[64];
        seen[i] = as_type<uint>(lanes[t]);
        float ones = 0.0f;
        if (t < 1024u) ones = simd_sum(1.0f);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        lanes[t] = ones + float(i);
    }
    kernel void read_params(device uint* seen [[buffer(0)]], threadgroup float* a [[threadgroup(0)]],
                            threadgroup uint* b [[threadgroup(1)]], uint i [[thread_position_in_grid]],
                            uint t [[thread_position_in_threadgroup]]) {
        seen[2 * i] = as_type<uint>(a[t]);
        seen[2 * i + 1] = b[t];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        a[t] = float(i);
        b[t] = i;
    }
    // No barrier, and a partial last group (CUDA: its threads past the grid return early).
    kernel void read_params_loop(device uint* seen [[buffer(0)]], threadgroup uint* c [[threadgroup(0)]],
                                 uint i [[thread_position_in_grid]], uint t [[thread_position_in_threadgroup]]) {
        seen[i] = c[t];
        c[t] = i;
    }
    // Written, then a barrier, then read: the right sums whatever the memory held before.
    kernel void group_sum(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                          threadgroup float* scratch [[threadgroup(0)]], uint i [[thread_position_in_grid]],
                          uint t [[thread_position_in_threadgroup]], uint g [[threadgroup_position_in_grid]],
                          uint n [[threads_per_threadgroup]]) {
        threadgroup float tile[64];
        tile[t] = x[i];
        scratch[t] = 2.0f * x[i];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (t == 0) {
            float s = 0, s2 = 0;
            for (uint k = 0; k < n; ++k) { s += tile[k]; s2 += scratch[k]; }
            out[2 * g] = s;
            out[2 * g + 1] = s2;
        }
    }
    '''

    kind = sys.argv[1]
    dev = {
        "cpu": lambda: mc.Device("cpu"),
        "cpu-checked": lambda: mc.Device("cpu", checked=True),
        "cpu-sandbox": lambda: mc.Device("cpu", sandbox=True),
        "metal-sim": lambda: mc.Device("metal-sim", family="apple7"),
        "cuda": lambda: mc.Device("cuda"),
    }[kind]()
    lib = dev.compile(SRC)
    groups, width = 64, 64
    n = groups * width
    seen = dev.zeros(6 * n, np.uint32)
    lib.read_first(n, seen, threadgroup=width)
    seen_loop = dev.zeros(n, np.uint32)
    lib.read_first_loop(n, seen_loop, threadgroup=width)
    seen_fibers = dev.zeros(n, np.uint32)
    lib.read_first_fibers(n, seen_fibers, threadgroup=width)
    schedules = sorted({lib.function(k).thread_schedule for k in lib.function_names})
    assert not kind.startswith("cpu") or schedules == ["fibers", "loop", "regions"], schedules  # the sim's are the CPU's
    seen_params = dev.zeros(2 * n, np.uint32)
    lib.read_params(n, seen_params, threadgroup=width, threadgroup_memory=[width * 4, width * 4])
    seen_params_loop = dev.zeros(n - 10, np.uint32)
    lib.read_params_loop(n - 10, seen_params_loop, threadgroup=width, threadgroup_memory=[width * 4])
    x = np.random.default_rng(5).random(n, dtype=np.float32)
    sums = dev.zeros(2 * groups, np.float32)
    lib.group_sum(n, x, sums, threadgroup=width, threadgroup_memory=[width * 4])
    expected = x.reshape(groups, width).sum(axis=1, dtype=np.float64)
    np.testing.assert_allclose(np.asarray(sums)[0::2], expected, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(sums)[1::2], 2 * expected, rtol=1e-5)
    variables = np.concatenate([np.asarray(seen).reshape(n, 6)[:, :5].ravel(), np.asarray(seen_loop),
                                np.asarray(seen_fibers)])
    params = np.concatenate([np.asarray(seen_params), np.asarray(seen_params_loop)])
    print(int((variables == 0xFFFFFFFF).sum()), variables.size, int((params == 0xFFFFFFFF).sum()), params.size)
    """
)

DEVICES = ["cpu", "cpu-checked", "metal-sim"] + (["cpu-sandbox"] if sys.platform.startswith("linux") else [])


def poisoned_reads(run_python, kind: str, env: dict) -> list[int]:
    """[poisoned, total] reads of the kernel's own variables, then of its [[threadgroup(i)]] memory."""
    done = run_python(SNIPPET.replace("sys.argv[1]", repr(kind)), env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return [int(v) for v in done.stdout.split()]


VARIABLE_READS, PARAMETER_READS = 64 * 64 * (5 + 1 + 1), 64 * 64 * 2 + 64 * 64 - 10


@pytest.mark.parametrize("kind", DEVICES)
def test_threadgroup_memory_is_poisoned_in_every_group(run_python, kind):
    """Every read before the group's first write sees 0xFF bytes (NaN as a float, 0xFFFFFFFF as a
    uint) in every one of the 64 groups: arrays, scalars, structs, atomics and [[threadgroup(i)]]
    memory, in each of the CPU's schedules (the vectorised loop, barrier regions, fibers); and a
    kernel that writes, waits at a barrier and reads sums right."""
    reads = poisoned_reads(run_python, kind, {"METALCALL_POISON_UNINITIALIZED": "1"})
    assert reads == [VARIABLE_READS, VARIABLE_READS, PARAMETER_READS, PARAMETER_READS]


@pytest.mark.parametrize("kind", [k for k in DEVICES if k != "metal-sim"])
def test_without_the_variable_the_cpu_poisons_nothing(run_python, kind):
    """The CPU's variables start at zero and keep the last group's values: no read sees 0xFF (what
    its [[threadgroup(i)]] memory holds is undefined: not checked)."""
    reads = poisoned_reads(run_python, kind, {"METALCALL_POISON_UNINITIALIZED": None})
    assert reads[:2] == [0, VARIABLE_READS] and reads[3] == PARAMETER_READS


def test_the_metal_simulator_poisons_without_the_variable(run_python):
    """Metal's rule holds on the simulator whatever the environment says."""
    reads = poisoned_reads(run_python, "metal-sim", {"METALCALL_POISON_UNINITIALIZED": None})
    assert reads == [VARIABLE_READS, VARIABLE_READS, PARAMETER_READS, PARAMETER_READS]


SHARED = textwrap.dedent(
    """
    import sys
    import numpy as np
    import metalcall as mc

    SRC = '''
    #include <metal_stdlib>
    using namespace metal;
    kernel void first_read(device uint* seen [[buffer(0)]], threadgroup uint* p [[threadgroup(0)]],
                           uint i [[thread_position_in_grid]], uint t [[thread_position_in_threadgroup]]) {
        threadgroup uint v[32];
        seen[2 * i] = v[t];
        seen[2 * i + 1] = p[t];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        v[t] = 7u;
        p[t] = 7u;
    }
    '''
    out = []
    for kind in sys.argv[1:]:
        dev = mc.Device("metal-sim", family="apple7") if kind == "metal-sim" else mc.Device("cpu")
        seen = dev.zeros(2 * 128, np.uint32)
        dev.compile(SRC).first_read(128, seen, threadgroup=32, threadgroup_memory=[32 * 4])
        out.append(int((np.asarray(seen)[0::2] == 0xFFFFFFFF).sum()))
    print(*out)
    """
)


def test_one_translation_serves_plain_poisoned_and_simulated_runs(run_python, tmp_path):
    """A kernel run on the CPU and then on the simulator in one process, then on the CPU under
    METALCALL_POISON_UNINITIALIZED=1 in another, with one disk cache: the CPU's plain run reads no
    poison in its variables, the other two read it in all of them (4 groups of 32), and the cache
    holds one translation: the poisoning is switched per launch, so no run compiles it again."""
    def run(env, *kinds):
        done = run_python(SHARED.replace("sys.argv[1:]", repr(list(kinds))),
                          env={"METALCALL_CACHE_DIR": str(tmp_path), "METALCALL_DEVICE": None, **env}, timeout=300)
        assert done.returncode == 0, done.stderr
        return [int(v) for v in done.stdout.split()]

    assert run({"METALCALL_POISON_UNINITIALIZED": None}, "cpu", "metal-sim") == [0, 128]
    assert run({"METALCALL_POISON_UNINITIALIZED": "1"}, "cpu") == [128]
    assert len(list((tmp_path / "translations").glob("*.tr"))) == 1


@pytest.mark.skipif(not cuda_present(), reason="no CUDA device")
def test_cuda_poisons_threadgroup_parameters(run_python):
    """CUDA fills the block's dynamic shared memory (the [[threadgroup(i)]] parameters) before any
    thread runs, also where threads past the grid's edge return; the kernel's own __shared__
    variables are left as CUDA leaves them (undefined: not checked)."""
    reads = poisoned_reads(run_python, "cuda", {"METALCALL_POISON_UNINITIALIZED": "1"})
    assert reads[1] == VARIABLE_READS and reads[2:] == [PARAMETER_READS, PARAMETER_READS]
