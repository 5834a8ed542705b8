#!/usr/bin/env python3
"""Compiles the prelude with NVRTC and runs cross_body.inc on a GPU.

Compares the GPU's values with the host's (cross_check.cpp built with $CXX,
default g++). Skips (exit 0, "SKIP") when no NVRTC, CUDA headers or GPU is
found (NVRTC_LIBRARY, or NVRTC_SITE_PACKAGES naming a site-packages with pip's
nvidia packages, points it at one). Usage: nvrtc_check.py [--keep-going]
"""
import ctypes
import glob
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PRELUDE = os.path.normpath(os.path.join(HERE, "../../src/msl/prelude"))


def candidates(patterns):
    roots = ["/usr/local/cuda", "/usr/local", "/usr", "/opt"] + glob.glob("/usr/local/cuda-*")
    # $NVRTC_SITE_PACKAGES: another Python's site-packages with pip's nvidia packages (as tools/nvrtc_check.py)
    sp = [os.environ.get("NVRTC_SITE_PACKAGES", ""), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]] + glob.glob("/usr/local/lib/python3*/*-packages") + glob.glob(os.path.expanduser("~/.local/lib/python3*/site-packages"))
    found = []
    for pat in patterns:
        for root in roots + sp:
            found += glob.glob(os.path.join(root, pat))
    return sorted(set(found))


def find_nvrtc():
    if os.environ.get("NVRTC_LIBRARY"):
        return os.environ["NVRTC_LIBRARY"]
    libs = candidates(["lib64/libnvrtc.so*", "lib/x86_64-linux-gnu/libnvrtc.so*", "lib/libnvrtc.so*",
                       "nvidia/cuda_nvrtc/lib/libnvrtc.so*", "nvidia/cu1*/lib/libnvrtc.so*", "targets/*/lib/libnvrtc.so*"])
    libs = [l for l in libs if "stubs" not in l and "builtins" not in l and "alt" not in os.path.basename(l)]
    return libs[-1] if libs else None


def find_include():
    hdrs = candidates(["include/cuda_fp16.h", "nvidia/cuda_runtime/include/cuda_fp16.h", "nvidia/cu1*/include/cuda_fp16.h",
                       "targets/*/include/cuda_fp16.h", "nvidia/cuda_nvrtc/include/cuda_fp16.h"])
    return os.path.dirname(hdrs[-1]) if hdrs else None


def check(cuda, r, what):
    if r != 0:
        raise RuntimeError(f"{what} failed with CUDA error {r}")


def main():
    nvrtc_path, include = find_nvrtc(), find_include()
    print(f"NVRTC: {nvrtc_path}\nCUDA headers: {include}")
    if not nvrtc_path or not include:
        print("SKIP: no NVRTC or no cuda_fp16.h")
        return 0
    nvrtc = ctypes.CDLL(nvrtc_path)
    major, minor = ctypes.c_int(), ctypes.c_int()
    nvrtc.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    print(f"NVRTC version {major.value}.{minor.value}")
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        cuda = None
    arch = "compute_80"
    if cuda is not None:
        check(cuda, cuda.cuInit(0), "cuInit")
        dev = ctypes.c_int()
        check(cuda, cuda.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
        cc_major, cc_minor = ctypes.c_int(), ctypes.c_int()
        cuda.cuDeviceGetAttribute(ctypes.byref(cc_major), 75, dev)
        cuda.cuDeviceGetAttribute(ctypes.byref(cc_minor), 76, dev)
        arch = f"compute_{cc_major.value}{cc_minor.value}"

    body = open(os.path.join(HERE, "cross_body.inc")).read()
    src = ('#include "metal_matrix.h"\n#include "metal_integer.h"\n' + body +
           # Vectors must work as __constant__ data (constexpr constructors) and
           # in __shared__ arrays (trivial default constructor).
           '\n__constant__ mtl_float4 cross_const = mtl_float4(mtl_float2(1, 2), 3, 4);\n'
           'extern "C" __global__ void cross_kernel(float* out, float seed, int* n) {\n'
           '  __shared__ mtl_float4 tg[32];\n'
           '  __shared__ mtl_float3x3 tgm[2];\n'
           '  tg[threadIdx.x] = cross_const.template mtl_swizzle<3, 2, 1, 0>();\n'
           '  tgm[0] = mtl_float3x3(2.0f);\n'
           '  __syncthreads();\n'
           '  const int k = prelude_cross_body(out, seed);\n'
           '  out[k] = tg[0].x + tgm[0][1][1];\n'
           '  *n = k;\n}\n')
    # The first compile also pays for NVRTC's start-up; the repeat shows the per-kernel cost.
    option_sets = [["--std=c++17"], ["--std=c++17", "-default-device"], ["--std=c++17"]]
    ptx = None
    for extra in option_sets:
        opts = extra + [f"-arch={arch}", f"-I{PRELUDE}", f"-I{include}"]
        prog = ctypes.c_void_p()
        nvrtc.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"cross.cu", 0, None, None)
        arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
        t0 = time.perf_counter()
        res = nvrtc.nvrtcCompileProgram(prog, len(opts), arr)
        ms = (time.perf_counter() - t0) * 1000
        size = ctypes.c_size_t()
        nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        nvrtc.nvrtcGetProgramLog(prog, log)
        text = log.value.decode(errors="replace").strip()
        print(f"--- NVRTC {' '.join(opts[:-2])}: {'OK' if res == 0 else 'FAILED (%d)' % res} in {ms:.0f} ms")
        if text:
            print("\n".join(text.splitlines()[:80]))
        if res == 0 and ptx is None:
            nvrtc.nvrtcGetPTXSize(prog, ctypes.byref(size))
            buf = ctypes.create_string_buffer(size.value)
            nvrtc.nvrtcGetPTX(prog, buf)
            ptx = buf.raw
    if ptx is None:
        print("FAIL: NVRTC could not compile the prelude")
        return 1
    # The umbrella, as the CUDA backend includes it (with the sync, atomic and
    # SIMD-group headers), must compile too.
    umbrella = ('#include "metal_stdlib.h"\nusing namespace metal;\n'
                'extern "C" __global__ void umbrella_kernel(mtl_float4* v) {\n'
                '  v[threadIdx.x] = sin(v[threadIdx.x]).template mtl_swizzle<3, 2, 1, 0>();\n}\n')
    prog = ctypes.c_void_p()
    nvrtc.nvrtcCreateProgram(ctypes.byref(prog), umbrella.encode(), b"umbrella.cu", 0, None, None)
    opts = ["--std=c++17", f"-arch={arch}", f"-I{PRELUDE}", f"-I{include}"]
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    res = nvrtc.nvrtcCompileProgram(prog, len(opts), arr)
    size = ctypes.c_size_t()
    nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    nvrtc.nvrtcGetProgramLog(prog, log)
    print(f"--- NVRTC metal_stdlib.h umbrella: {'OK' if res == 0 else 'FAILED (%d)' % res}")
    if log.value.strip():
        print("\n".join(log.value.decode(errors="replace").strip().splitlines()[:40]))
    if res != 0:
        return 1
    if cuda is None:
        print("SKIP: compiled, but no GPU driver to run it")
        return 0

    ctx, mod, fn = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    check(cuda, cuda.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev), "cuCtxCreate")
    check(cuda, cuda.cuModuleLoadData(ctypes.byref(mod), ptx), "cuModuleLoadData")
    check(cuda, cuda.cuModuleGetFunction(ctypes.byref(fn), mod, b"cross_kernel"), "cuModuleGetFunction")
    d_out, d_n = ctypes.c_uint64(), ctypes.c_uint64()
    check(cuda, cuda.cuMemAlloc_v2(ctypes.byref(d_out), 4096), "cuMemAlloc")
    check(cuda, cuda.cuMemAlloc_v2(ctypes.byref(d_n), 4), "cuMemAlloc")
    seed = ctypes.c_float(0.5)
    params = (ctypes.c_void_p * 3)(ctypes.addressof(d_out), ctypes.addressof(seed), ctypes.addressof(d_n))
    check(cuda, cuda.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, None, params, None), "cuLaunchKernel")
    check(cuda, cuda.cuCtxSynchronize(), "cuCtxSynchronize")
    out = (ctypes.c_float * 1024)()
    n = ctypes.c_int()
    check(cuda, cuda.cuMemcpyDtoH_v2(out, d_out, 4096), "cuMemcpyDtoH")
    check(cuda, cuda.cuMemcpyDtoH_v2(ctypes.byref(n), d_n, 4), "cuMemcpyDtoH")
    gpu = [out[k] for k in range(n.value)]
    if out[n.value] != 6.0:
        print(f"FAIL: __constant__/__shared__ vectors gave {out[n.value]}, expected 6")
        return 1

    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("clang++")
    if not cxx:
        print("GPU values (no host compiler to compare with):")
        print(" ".join("%.9g" % v for v in gpu))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "cross_check")
        subprocess.run([cxx, "-std=c++17", "-O2", f"-I{PRELUDE}", os.path.join(HERE, "cross_check.cpp"), "-o", exe], check=True)
        host = [float(l) for l in subprocess.run([exe], check=True, capture_output=True, text=True).stdout.split()]
    if len(host) != len(gpu):
        print(f"FAIL: host wrote {len(host)} values, GPU {len(gpu)}")
        return 1
    bad = 0
    for k, (a, b) in enumerate(zip(host, gpu)):
        same = (a == b) or (a != a and b != b) or abs(a - b) <= 2e-6 * max(1.0, abs(a))
        if not same:
            bad += 1
            print(f"value {k}: host {a:.9g} gpu {b:.9g}")
    print(f"{len(host)} values compared, {bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
