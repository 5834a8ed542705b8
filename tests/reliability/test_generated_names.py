"""Generated names live in a reserved namespace (issue P2.4 item 7): any valid MSL identifier
works as a kernel, struct, function, variable or parameter name. Before, the entry points that
the translator writes declared plain locals (the launch `L`, the worker `W`, the group `g`,
`x0`, `lx`, the arguments `p0`...), so a kernel or struct named like one of them broke the
build ("called object type 'unsigned int' is not a function"). Now the generated names are all
mtl_ ones, which user source may not spell; and the CUDA translation renames a user's name
that NVRTC declares itself (`y0`, `j1`, `dim3`, `threadIdx`). Each name the CPU and CUDA entry
points use, and such names of NVRTC's, is
tried as a kernel's name, a struct's name (a buffer's and a `constant T&`'s element type), a
function's and a program-scope constant's, on the plain and checked CPU devices and on CUDA
where there is one. The reserved names themselves are refused with the rule's error."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc

# Every local, parameter and type name of the CPU and CUDA entry points before they moved
# to the reserved namespace, the fields they read, and the list.
GENERATED = [
    "x", "y", "z", "g", "x0", "y0", "z0", "lx", "ly", "lz", "gx", "gy", "gz", "ax", "ay", "az",
    "tx", "ty", "tz", "ngx", "ngy", "L", "W", "P", "c", "c_", "tid", "count", "ops", "i",
    "p0", "p1", "p2", "g_begin", "g_end", "args", "arg_bytes", "grid", "group", "groups",
    "fibers", "run_group", "threadgroup_memory", "geometry", "origin", "body", "ctx", "simd_width", "sw",
    # Names NVRTC declares in the global namespace (its math functions and vector types of
    # other widths, built-in variables): the CUDA translation renames the user's.
    "y1", "j0", "j1", "jn", "yn", "erfinv", "normcdf", "rhypot", "dim3", "int1", "float1", "double2",
    "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "clock",
    # Names of NVRTC's that the prelude spells without declaring them (its calls of CUDA's
    # functions; a CPU-only field y0 kept the user's y0 from being renamed), and others of
    # its global names: math, half, atomic, texture and vector-making functions, runtime types.
    "cospif", "exp10f", "exp2f", "fmaxf", "fminf", "log1pf", "rsqrtf", "sinpif", "memcpy", "erf", "tgamma",
    "lgamma", "norm3df", "sincospi", "hsqrt", "h2exp", "atomicAdd", "atomicCAS_block", "make_float4",
    "tex2D", "surf2Dwrite", "syncthreads_or", "cudaError", "cudaStream_t", "nv_half",
]
N = 8
HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"


def devices(device):
    """The device under test, and the checked CPU device alongside the plain one."""
    return [device, mc.Device("cpu", checked=True)] if device.backend == "cpu" else [device]


def test_kernels_named_like_metal_namespaces(device):
    """Kernels named `precise` and `fast`, as metal's namespaces are (which `using namespace
    metal;` makes visible): the entry point calls the kernel by its qualified name (`::precise`),
    where an unqualified call was ambiguous for NVRTC."""
    src = HEADER + "".join(
        f"kernel void {name}(device float* a [[buffer(0)]], uint j [[thread_position_in_grid]]) "
        f"{{ a[j] = a[j] * 3.0f + {k}.0f; }}\n"
        for k, name in enumerate(["precise", "fast"])
    )
    for dev in devices(device):
        lib = dev.compile(src)
        for k, name in enumerate(["precise", "fast"]):
            a = np.arange(N, dtype=np.float32)
            lib.function(name)(N, a)
            np.testing.assert_array_equal(a, np.arange(N) * 3 + k, err_msg=name)


def test_kernels_named_like_generated_names(device):
    src = HEADER + "".join(
        f"kernel void {name}(device float* a [[buffer(0)]], uint j [[thread_position_in_grid]]) "
        f"{{ a[j] = a[j] * 2.0f + {k}.0f; }}\n"
        for k, name in enumerate(GENERATED)
    )
    for dev in devices(device):
        lib = dev.compile(src)
        for k, name in enumerate(GENERATED):
            a = np.arange(N, dtype=np.float32)
            lib.function(name)(N, a)
            np.testing.assert_array_equal(a, np.arange(N) * 2 + k, err_msg=name)


@pytest.mark.parametrize("chunk", range(0, len(GENERATED), 16))
def test_structs_functions_and_constants_named_like_generated_names(device, chunk):
    names = GENERATED[chunk : chunk + 16]
    # Structs are the element types of buffers and of a `constant T&`; functions and
    # constants carry the names with a suffix-free twin in a namespace of their own.
    src = HEADER + "".join(f"struct {n} {{ float v; int w; }};\n" for n in names)
    src += "namespace fn {\n" + "".join(f"float {n}(float v) {{ return v + 1.0f; }}\n" for n in names) + "}\n"
    src += "namespace cst {\n" + "".join(f"constant float {n} = {k}.0f;\n" for k, n in enumerate(names)) + "}\n"
    params = ", ".join(f"device {n}* b{k} [[buffer({k})]]" for k, n in enumerate(names))
    body = "".join(
        f"  b{k}[j].v = fn::{n}(b{k}[j].v) + cst::{n} + float(scale.w); b{k}[j].w = int(j) * {k};\n"
        for k, n in enumerate(names)
    )
    src += (
        f"kernel void k({params}, constant {names[0]}& scale [[buffer({len(names)})]],\n"
        f"              uint j [[thread_position_in_grid]]) {{\n{body}}}\n"
    )
    dtype = np.dtype([("v", np.float32), ("w", np.int32)])
    for dev in devices(device):
        k = dev.compile(src).k
        arrays = [np.zeros(N, dtype) for _ in names]
        for a in arrays:
            a["v"] = np.arange(N)
        scale = np.zeros((), dtype)
        scale["w"] = 10
        k(N, *arrays, scale)
        for n_index, a in enumerate(arrays):
            np.testing.assert_array_equal(a["v"], np.arange(N) + 1 + n_index + 10, err_msg=names[n_index])
            np.testing.assert_array_equal(a["w"], np.arange(N) * n_index, err_msg=names[n_index])


@pytest.mark.parametrize(
    "name",
    ["mtl_checked", "mtl_rt", "mtl_count", "metalcall_entry_0", "METALCALL_KERNEL", "mtl_L", "METAL_LIBM_DOUBLE"],
)
def test_reserved_names_are_refused(cpu_device, name):
    src = HEADER + f"kernel void k(device float* a [[buffer(0)]], uint j [[thread_position_in_grid]]) {{ int {name} = 1; a[j] = float({name}); }}\n"
    with pytest.raises(mc.CompileError, match=r"\[MSL rule: no names of metalcall's implementation\]"):
        cpu_device.compile(src)
