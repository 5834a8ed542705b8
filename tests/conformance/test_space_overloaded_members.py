"""SPIRV-Cross's spvStorageMatrix pattern (its shared-matrix-*.comp outputs): a class whose
constructors, assignments, subscripts and conversion are overloaded by the address space of
`this` and of their reference parameters, with loops in the bodies, used from thread,
threadgroup and device objects; its `initializer_list` (unqualified) assignment is declared, as
SPIRV-Cross writes it, and not called. The CPU and CUDA
targets keep every object in one address space, so overloads with the same body are one; ones
whose bodies differ are a CompileError (tests/conformance/test_this_address_space.py).
Checked against NumPy on every device.
"""

from __future__ import annotations

import numpy as np

from mcconf import KernelSet, assert_close

PREAMBLE = """
template <typename T, int Cols, int Rows = Cols>
struct so_matrix {
    vec<T, Rows> columns[Cols];
    so_matrix() thread = default;
    so_matrix() threadgroup = default;
    so_matrix() device = default;
    thread so_matrix& operator=(initializer_list<vec<T, Rows>> cols) thread {
        size_t i;
        thread vec<T, Rows>* col;
        for (i = 0, col = cols.begin(); i < Cols; ++i, ++col) columns[i] = *col;
        return *this;
    }
    so_matrix(const thread matrix<T, Cols, Rows>& m) thread {
        for (size_t i = 0; i < Cols; ++i) columns[i] = m.columns[i];
    }
    so_matrix(const constant matrix<T, Cols, Rows>& m) thread {
        for (size_t i = 0; i < Cols; ++i) columns[i] = m.columns[i];
    }
    so_matrix(const device matrix<T, Cols, Rows>& m) thread {
        for (size_t i = 0; i < Cols; ++i) columns[i] = m.columns[i];
    }
    threadgroup so_matrix& operator=(const thread matrix<T, Cols, Rows>& m) threadgroup {
        for (size_t i = 0; i < Cols; ++i) columns[i] = m.columns[i];
        return *this;
    }
    threadgroup so_matrix& operator=(const device matrix<T, Cols, Rows>& m) threadgroup {
        for (size_t i = 0; i < Cols; ++i) columns[i] = m.columns[i];
        return *this;
    }
    device so_matrix& operator=(const thread matrix<T, Cols, Rows>& m) device {
        for (size_t i = 0; i < Cols; ++i) columns[i] = m.columns[i];
        return *this;
    }
    operator matrix<T, Cols, Rows>() const thread {
        matrix<T, Cols, Rows> m;
        for (int i = 0; i < Cols; ++i) m.columns[i] = columns[i];
        return m;
    }
    operator matrix<T, Cols, Rows>() const threadgroup {
        matrix<T, Cols, Rows> m;
        for (int i = 0; i < Cols; ++i) m.columns[i] = columns[i];
        return m;
    }
    operator matrix<T, Cols, Rows>() const device {
        matrix<T, Cols, Rows> m;
        for (int i = 0; i < Cols; ++i) m.columns[i] = columns[i];
        return m;
    }
    vec<T, Rows> operator[](size_t idx) const thread { return columns[idx]; }
    vec<T, Rows> operator[](size_t idx) const threadgroup { return columns[idx]; }
    vec<T, Rows> operator[](size_t idx) const device { return columns[idx]; }
};
"""

KS = KernelSet([
    """
kernel void so_storage_matrix(const device float2x2* in [[buffer(0)]], device so_matrix<float, 2>* out [[buffer(1)]],
                              device float4* parts [[buffer(2)]], uint lid [[thread_position_in_threadgroup]],
                              uint gid [[thread_position_in_grid]]) {
    threadgroup so_matrix<float, 2> shared[8];
    shared[lid] = in[gid];                      // threadgroup = device matrix
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float2x2 m = shared[7 - lid];               // conversion of a threadgroup object
    so_matrix<float, 2> local(m);               // thread from thread
    so_matrix<float, 2> from_device(in[gid]);   // thread from device
    out[gid] = float2x2(local) * 2.0f;          // device = thread matrix
    float2x2 back = out[gid];                   // conversion of a device object
    parts[gid] = float4(local[1] + from_device[0], back[0].x + float(gid), shared[lid][1].y);
}
""",
], preamble=PREAMBLE)


def test_storage_matrix_pattern(device, rng):
    n = 16
    mats = rng.standard_normal((n, 2, 2)).astype(np.float32)  # [column][row], as float2x2 stores them
    out = np.zeros((n, 2, 2), np.float32)
    parts = np.zeros((n, 4), np.float32)
    KS.get(device, "so_storage_matrix")(n, mats, out, parts, threadgroup=8)
    g = np.arange(n)
    swapped = mats[(g // 8) * 8 + 7 - g % 8]  # each thread's matrix from the reversed group
    assert_close(out, swapped * 2.0, rtol=1e-6, atol=1e-6)
    expect = np.stack([
        swapped[:, 1, 0] + mats[:, 0, 0], swapped[:, 1, 1] + mats[:, 0, 1],
        swapped[:, 0, 0] * 2.0 + g, mats[:, 1, 1],
    ], 1)
    assert_close(parts, expect, rtol=1e-6, atol=1e-6)
