"""Audit of the Metal backend's plan and simulator against Apple's documentation (docs/metal-backend.md,
"Rules, their sources and where they are enforced"). Each test checks values against NumPy or a limit
against the Apple page it comes from; the same calls run on the CPU devices, whose results must match."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc

SIM_FAMILIES = ["apple7", "apple3", "intel", "amd"]
DEVICES = ["cpu", "cpu-checked"] + [f"metal-sim:{f}" for f in SIM_FAMILIES]

SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void widen_halves(constant half* x [[buffer(0)]], device float* out [[buffer(1)]],
                         uint i [[thread_position_in_grid]]) {
    out[i] = float(x[i]) * 2.0f;
}
kernel void lookup(constant uchar* lut [[buffer(0)]], device uint* out [[buffer(1)]],
                   uint i [[thread_position_in_grid]]) {
    out[i] = uint(lut[i]) * 3u;
}
kernel void bump(device uchar* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    x[i] = uchar(x[i] + 1);
}
kernel void iota(device uint* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    out[i] = i;
}
"""


def open_device(name: str) -> mc.Device:
    if name == "cpu":
        return mc.Device("cpu")
    if name == "cpu-checked":
        return mc.Device("cpu", checked=True)
    return mc.Device("metal-sim", family=name.split(":")[1])


@pytest.fixture(params=DEVICES)
def dev(request) -> mc.Device:
    return open_device(request.param)


def group_for(dev: mc.Device, n: int) -> dict:
    """apple3 runs whole threadgroups only: a threadgroup that divides n."""
    return {"threadgroup": 1} if dev.name.endswith("(apple3)") and n % 2 else {}


def at_address(nbytes: int, modulo_256: int) -> np.ndarray:
    """`nbytes` of zeroed host memory whose address is `modulo_256` past a multiple of 256 (never whole
    pages: staged, so a constant-space binding needs an aligned copy on Metal)."""
    raw = np.zeros(nbytes + 1024, np.uint8)
    start = (-raw.ctypes.data + modulo_256) % 256
    return raw[start : start + nbytes]


@pytest.mark.parametrize("count", [1, 3, 5, 7, 9])
def test_constant_halves_of_odd_byte_length(dev, count):
    """copyFromBuffer:sourceOffset:toBuffer:destinationOffset:size: in macOS takes offsets and a size that
    are multiples of 4: 2-byte elements at 16 bytes past 256 need an aligned copy of a length that is not,
    which the planner rounds up to whole words (the simulator refuses a plan that does not)."""
    lib = dev.compile(SRC)
    values = (np.arange(count, dtype=np.float32) * 0.75 - 2).astype(np.float16)
    host = at_address(values.nbytes, 16).view(np.float16)
    host[:] = values
    out = np.zeros(count, np.float32)
    lib.widen_halves(count, host, out, **group_for(dev, count))
    np.testing.assert_array_equal(out, values.astype(np.float32) * 2)


@pytest.mark.parametrize("skew", [1, 2, 3])
def test_constant_bytes_past_a_word(dev, skew):
    """A constant uchar table 1 to 3 bytes past a 4-byte word: no buffer blit can realign it on macOS, so
    the planner copies it on the host into a staging buffer of its own before the commit."""
    lib = dev.compile(SRC)
    n = 37
    table = (np.arange(n, dtype=np.uint32) * 7 % 256).astype(np.uint8)
    host = at_address(n + 8, 32)[skew : skew + n]
    host[:] = table
    out = np.zeros(n, np.uint32)
    lib.lookup(n, host, out, **group_for(dev, n))
    np.testing.assert_array_equal(out, table.astype(np.uint32) * 3)


def test_view_of_a_buffer_at_the_end_of_an_odd_length(dev):
    """The last 10 bytes of a 30-byte Buffer, 20 bytes in, through a constant pointer: the aligned copy's
    blit reads 3 whole words, inside the Buffer's MTLBuffer (its length rounded up to whole words)."""
    lib = dev.compile(SRC)
    values = np.arange(15, dtype=np.float16) - 7
    buf = dev.asarray(values)
    view = np.asarray(buf)[10:]
    out = np.zeros(5, np.float32)
    lib.widen_halves(5, view, out, **group_for(dev, 5))
    np.testing.assert_array_equal(out, values[10:].astype(np.float32) * 2)


@pytest.mark.parametrize("family", SIM_FAMILIES)
def test_view_of_a_buffer_past_a_word_is_refused(family):
    """A constant uchar view of a Buffer 2 bytes past a word: setBuffer:offset: refuses the offset for the
    constant address space and no blit can realign it in macOS; the GPU's memory may be written by earlier
    work, so no host copy either: an ArgumentError that says what to do (the CPU runs it)."""
    sim = mc.Device("metal-sim", family=family)
    lib = sim.compile(SRC)
    buf = sim.asarray(np.arange(64, dtype=np.uint8))
    out = np.zeros(16, np.uint32)
    with pytest.raises(mc.ArgumentError, match="cannot realign"):
        lib.lookup(16, np.asarray(buf)[2:18], out)
    cpu = mc.Device("cpu")
    cbuf = cpu.asarray(np.arange(64, dtype=np.uint8))
    cpu.compile(SRC).lookup(16, np.asarray(cbuf)[2:18], out)
    np.testing.assert_array_equal(out, np.arange(2, 18, dtype=np.uint32) * 3)


@pytest.mark.parametrize("family", SIM_FAMILIES)
def test_batch_reading_bytes_an_earlier_call_wrote_past_a_word(family):
    """In one batch, call 1 writes a uchar array and call 2 reads it 1 byte in through a constant pointer:
    only a GPU copy could give call 2 call 1's bytes, and in macOS a buffer blit cannot move them by 1, so
    the planner refuses (ArgumentError) rather than bind an offset Metal does not allow; outside a batch
    the same calls run (each submission copies its host memory in)."""
    sim = mc.Device("metal-sim", family=family)
    lib = sim.compile(SRC)
    n = 32
    host = at_address(n + 4, 64)
    host[:] = np.arange(n + 4, dtype=np.uint8)
    out = np.zeros(n, np.uint32)
    kw = {"threadgroup": 8} if family == "apple3" else {}
    with pytest.raises(mc.ArgumentError, match="earlier call of this batch writes"):
        with sim.batch():
            lib.bump(n + 4, host, **({"threadgroup": 4} if family == "apple3" else {}))
            lib.lookup(n, host[1 : 1 + n], out, **kw)
    sim.synchronize()
    host[:] = np.arange(n + 4, dtype=np.uint8)
    lib.bump(n + 4, host, **({"threadgroup": 4} if family == "apple3" else {}))
    lib.lookup(n, host[1 : 1 + n], out, **kw)
    np.testing.assert_array_equal(out, (np.arange(1, n + 1, dtype=np.uint32) + 1) * 3)


def test_apple3_threadgroups_have_at_most_512_threads():
    """Apple's implementation-limits table (developer.apple.com/metal/limits): 512 threads per threadgroup
    for iOS GPU families 1 to 3 (Apple1-Apple3, the A9 the apple3 family models), 1024 from Apple4 and
    on Mac2. A pipeline of such a GPU reports at most 512, and a threadgroup of 1024 is refused."""
    sim = mc.Device("metal-sim", family="apple3")
    assert sim.max_threads_per_threadgroup == 512
    lib = sim.compile(SRC)
    assert 0 < lib.iota.max_total_threads_per_threadgroup <= 512
    out = np.zeros(2048, np.uint32)
    with pytest.raises((mc.ArgumentError, mc.ExecutionError)):
        lib.iota(2048, out, threadgroup=1024)
    lib.iota(2048, out, threadgroup=lib.iota.max_total_threads_per_threadgroup)
    np.testing.assert_array_equal(out, np.arange(2048, dtype=np.uint32))
    for family in ("apple7", "intel", "amd"):
        assert mc.Device("metal-sim", family=family).max_threads_per_threadgroup == 1024


FC_SRC = """
#include <metal_stdlib>
using namespace metal;
constant int fc_n [[function_constant(0)]];
constant float fc_s [[function_constant(1)]];
constant bool fc_has_s = is_function_constant_defined(fc_s);
kernel void fc_uses_n(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    out[i] = float(fc_n) + (fc_has_s ? fc_s : 100.0f);
}
kernel void fc_none(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    out[i] = 7.0f;
}
"""


@pytest.mark.xfail(strict=True, reason="the simulator marks no function constant required (no precise per-kernel "
                   "use list); a Mac refuses the call: docs/metal-backend.md, 'Known divergence'")
@pytest.mark.parametrize("family", SIM_FAMILIES)
def test_required_function_constants(family):
    """MTLFunctionConstant.required: a constant is optional only if the source calls
    is_function_constant_defined on it; a function that uses a required one cannot be specialised
    without its value (makeFunction(name:constantValues:)), which the Metal driver reports as an
    ArgumentError (metal_plan/function_constants). The simulator marks none required, so the kernel
    runs with fc_n = 0 where a Mac refuses it. A kernel that does not use fc_n needs no value."""
    sim = mc.Device("metal-sim", family=family)
    lib = sim.compile(FC_SRC)
    out = np.zeros(8, np.float32)
    with pytest.raises(mc.ArgumentError, match="needs function constant 'fc_n'"):
        lib.function("fc_uses_n")(8, out)
    with pytest.raises(mc.ArgumentError, match="needs function constant 'fc_n'"):
        lib.function("fc_uses_n", constants={"fc_s": 0.5})(8, out)
    cpu = mc.Device("cpu").compile(FC_SRC)
    for constants, expected in (({"fc_n": 3}, 103.0), ({"fc_n": 3, "fc_s": 0.5}, 3.5)):
        for library in (lib, cpu):
            out[:] = 0
            library.function("fc_uses_n", constants=constants)(8, out)
            np.testing.assert_array_equal(out, np.full(8, expected, np.float32))
    lib.fc_none(8, out)
    np.testing.assert_array_equal(out, np.full(8, 7.0, np.float32))


REF_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void set_first(device float& x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    x = 42.0f;
}
kernel void read_texture(texture2d<float, access::read> t [[texture(0)]], device float* out [[buffer(0)]],
                         uint2 g [[thread_position_in_grid]]) {
    out[g.y * t.get_width() + g.x] = t.read(g).x;
}
"""


@pytest.mark.parametrize("family", ["apple7", "amd"])
def test_reference_writes_count_for_texture_coherence(family, monkeypatch):
    """A kernel that writes a texture's memory through a `device float&` and, in the same compute pass,
    a read of it through the texture: Metal keeps the two views coherent only across passes. The
    planner separates the passes (core marks the reference written); handed merged passes
    (METALCALL_METAL_SIM_FAULT=merge-passes) the simulator must refuse the plan, as it does for a
    pointer. It counted only pointer parameters as writes, so it ran the pass and the read saw stale
    texels (0 where the kernel wrote 42)."""
    sim = mc.Device("metal-sim", family=family)
    lib = sim.compile(REF_SRC)
    tex = sim.texture((8, 16), "r32float")
    out = sim.empty(8 * 16, np.float32)
    expected = np.zeros((8, 16), np.float32)
    expected[0, 0] = 42.0
    with sim.batch():  # the planner's own plan: two passes, the write seen
        lib.set_first(1, tex)
        lib.read_texture((16, 8), out, textures=[tex])
    np.testing.assert_array_equal(np.asarray(out).reshape(8, 16), expected)
    monkeypatch.setenv("METALCALL_METAL_SIM_FAULT", "merge-passes")
    with pytest.raises(mc.ExecutionError, match="through a texture and through a buffer binding in one compute pass"):
        with sim.batch():
            lib.set_first(1, tex)
            lib.read_texture((16, 8), out, textures=[tex])


TEX_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void tex_high(texture2d<float, access::read> t [[texture(30)]], device float* out [[buffer(0)]],
                     uint2 g [[thread_position_in_grid]]) {
    out[g.y * 4 + g.x] = t.read(g).x;
}
kernel void tex_past(texture2d<float, access::read> t [[texture(31)]], device float* out [[buffer(0)]],
                     uint2 g [[thread_position_in_grid]]) {
    out[g.y * 4 + g.x] = t.read(g).x;
}
kernel void tex_array(array<texture2d<float, access::read>, 2> ts [[texture(30)]], device float* out [[buffer(0)]],
                      uint2 g [[thread_position_in_grid]]) {
    out[g.y * 4 + g.x] = ts[1].read(g).x;
}
"""


@pytest.mark.parametrize("family", SIM_FAMILIES)
def test_texture_argument_table_of_the_family(family):
    """Apple's implementation-limits table: 31 entries in the texture argument table on iOS GPU families
    1-3 (apple3, the A9), 128 on Macs. texture(30) fits everywhere; texture(31), or an array of 2 from
    30, lies past an A9's table: its pipeline is refused there (a CompileError, as for the family's
    other missing features) and runs on the Mac families."""
    sim = mc.Device("metal-sim", family=family)
    lib = sim.compile(TEX_SRC)
    values = np.arange(16, dtype=np.float32).reshape(4, 4)
    tex = sim.texture_from(values)
    out = np.zeros(16, np.float32)
    # textures= is indexed by texture index: None up to the bound one
    lib.tex_high((4, 4), out, textures=[None] * 30 + [tex], **({"threadgroup": (2, 2)} if family == "apple3" else {}))
    np.testing.assert_array_equal(out.reshape(4, 4), values)
    for name in ("tex_past", "tex_array"):
        if family == "apple3":
            with pytest.raises(mc.CompileError, match="past the 31 entries of the texture argument table"):
                lib.function(name)
        else:
            out[:] = 0
            args = [None] * 31 + [tex] if name == "tex_past" else [None] * 30 + [tex, tex]
            lib.function(name)((4, 4), out, textures=args)
            np.testing.assert_array_equal(out.reshape(4, 4), values)


def _index_kernel(params: str, body: str = "out[0] = 1.0f;") -> str:
    return ("#include <metal_stdlib>\nusing namespace metal;\n"
            f"kernel void k(device float* out [[buffer(0)]], {params}, uint i [[thread_position_in_grid]]) {{ {body} }}\n")


def test_texture_and_sampler_indices_have_their_own_tables(dev):
    """Metal's argument tables (implementation limits): 31 buffers, 31 threadgroup memory entries, 128
    textures on Macs, 16 samplers. An index given implicitly or by an expression was checked against the
    buffers' 31 whatever the parameter's kind, so `texture2d<float> t [[texture(31)]]` (valid on every
    Mac) was refused ("buffer argument table has indices 0 to 30"); an array of textures is checked to
    its last index."""
    ok = dev.compile(_index_kernel("texture2d<float, access::read> t [[texture(31)]], "
                                   "array<texture2d<float, access::read>, 2> u [[texture(126)]], sampler s [[sampler(15)]]"))
    if dev.name.endswith("(apple3)"):  # an A9's texture table has 31 entries (test_texture_argument_table_of_the_family)
        with pytest.raises(mc.CompileError, match="past the 31 entries"):
            ok.function("k")
    else:
        assert {p["name"]: p["binding"] for p in ok.k.params if p["name"] in ("t", "u", "s")} == {"t": 31, "u": 126, "s": 15}
    for params, table in (("array<texture2d<float, access::read>, 2> u [[texture(127)]]", "texture"),
                          ("texture2d<float, access::read> t [[texture(128)]]", "texture"),
                          ("sampler s [[sampler(16)]]", "sampler")):
        with pytest.raises(mc.CompileError, match=f"{table} argument table has indices 0 to"):
            dev.compile(_index_kernel(params))
