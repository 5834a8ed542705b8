"""Matrix types float2x2 .. float4x4 (column-major, columns padded like float3):
construction, column access, matrix * vector, vector * matrix, matrix * matrix,
transpose, determinant, scalar ops, half matrices, non-square float3x4 / float4x3."""

from __future__ import annotations

import numpy as np

from mcconf import KernelSet, assert_close

KS = KernelSet([
    # float4x4 in a buffer: 64 bytes, column-major
    """
kernel void mx_mat4_vec(const device float4x4* m [[buffer(0)]], const device float4* v [[buffer(1)]],
                        device float4* mv [[buffer(2)]], device float4* vm [[buffer(3)]],
                        uint i [[thread_position_in_grid]]) {
    float4x4 M = m[i];
    mv[i] = M * v[i];
    vm[i] = v[i] * M;
}
""",
    """
kernel void mx_mat4_mul(const device float4x4* a [[buffer(0)]], const device float4x4* b [[buffer(1)]],
                        device float4x4* c [[buffer(2)]], device float4x4* t [[buffer(3)]],
                        uint i [[thread_position_in_grid]]) {
    c[i] = a[i] * b[i];
    t[i] = transpose(a[i]) + 2.0f * b[i];
}
""",
    # float3x3 (columns are float3: 16 bytes each, 48 bytes total)
    """
kernel void mx_mat3(const device float3x3* m [[buffer(0)]], const device float3* v [[buffer(1)]],
                    device float3* mv [[buffer(2)]], device float* det [[buffer(3)]],
                    device float3x3* sq [[buffer(4)]], uint i [[thread_position_in_grid]]) {
    float3x3 M = m[i];
    mv[i] = M * v[i];
    det[i] = determinant(M);
    sq[i] = M * transpose(M);
}
""",
    """
kernel void mx_mat2(const device float2x2* m [[buffer(0)]], const device float2* v [[buffer(1)]],
                    device float2* mv [[buffer(2)]], device float* det [[buffer(3)]],
                    device float2x2* inv [[buffer(4)]], uint i [[thread_position_in_grid]]) {
    float2x2 M = m[i];
    mv[i] = M * v[i];
    float d = determinant(M);
    det[i] = d;
    inv[i] = float2x2(float2(M[1][1], -M[0][1]), float2(-M[1][0], M[0][0])) * (1.0f / d);
}
""",
    # constructing matrices: from columns, diagonal float4x4(s), element writes
    """
kernel void mx_construct(const device float* s [[buffer(0)]], device float4x4* out [[buffer(1)]],
                         device float* det [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float x = s[i];
    float4x4 rot = float4x4(float4(cos(x), sin(x), 0, 0),
                            float4(-sin(x), cos(x), 0, 0),
                            float4(0, 0, 1, 0),
                            float4(1, 2, 3, 1));        // rotation about z + translation
    float4x4 scale = float4x4(x);                         // x on the diagonal
    scale[3][3] = 1.0f;
    float4x4 m = rot * scale;
    m[2].y += 0.5f;
    out[i] = m;
    det[i] = determinant(m);
}
""",
    # non-square: float3x4 has 3 columns of float4; float4x3 has 4 columns of float3
    """
kernel void mx_nonsquare(const device float3x4* a [[buffer(0)]], const device float3* v [[buffer(1)]],
                         device float4* av [[buffer(2)]], device float4x3* at [[buffer(3)]],
                         device float3x3* ata [[buffer(4)]], uint i [[thread_position_in_grid]]) {
    float3x4 A = a[i];
    av[i] = A * v[i];
    float4x3 T = transpose(A);
    at[i] = T;
    ata[i] = T * A;
}
""",
    """
kernel void mx_half(const device half4x4* m [[buffer(0)]], const device half4* v [[buffer(1)]],
                    device half4* mv [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    mv[i] = m[i] * v[i];
}
""",
    # matrix arithmetic: +, -, scalar *, *=, unary -
    """
kernel void mx_arith(const device float3x3* a [[buffer(0)]], const device float3x3* b [[buffer(1)]],
                     device float3x3* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float3x3 A = a[i];
    float3x3 B = b[i];
    float3x3 C = A + B * 0.5f - A;
    C *= 4.0f;
    out[2 * i + 0] = C;
    float3x3 D = A;
    D *= B;
    out[2 * i + 1] = -D;
}
""",
    # non-square 2-column / 3-column matrices and their transposes
    """
kernel void mx_small_nonsquare(const device float2x3* a [[buffer(0)]], const device float2* v [[buffer(1)]],
                               device float3* av [[buffer(2)]], device float3x2* at [[buffer(3)]],
                               device float2* atw [[buffer(4)]], uint i [[thread_position_in_grid]]) {
    float2x3 A = a[i];                  // 2 columns of float3
    av[i] = A * v[i];
    float3x2 T = transpose(A);          // 3 columns of float2
    T[2][1] += 1.0f;
    at[i] = T;
    atw[i] = T * float3(1.0f, 2.0f, 3.0f);
}
""",
    # columns written as braced lists (a Gaussian kernel, as image filters write it)
    """
kernel void mx_braced_columns(const device float3* v [[buffer(0)]], device float3* out [[buffer(1)]],
                              device float* det [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    const half3x3 g = half3x3({1.0, 2.0, 1.0}, {2.0, 4.0, 2.0}, {1.0, 2.0, 1.0});
    const float2x2 r = float2x2({0.0f, 1.0f}, {-1.0f, 0.0f});
    out[i] = float3(g * half3(v[i])) + float3(r * v[i].xy, 0.0f);
    det[i] = determinant(float4x4({1, 0, 0, 0}, {0, 2, 0, 0}, {0, 0, 3, 0}, {0, 0, 0, float(i)}));
}
""",
])

N = 128


def cols_to_np(m):
    """(n, C, R[pad]) column-major storage -> (n, R, C) row-major math matrices."""
    return np.swapaxes(m, 1, 2)


def np_to_cols(m, pad=None):
    c = np.swapaxes(m, 1, 2).astype(np.float32)
    if pad:
        c = np.concatenate([c, np.zeros(c.shape[:2] + (pad - c.shape[2],), np.float32)], 2)
    return np.ascontiguousarray(c)


def test_mat4_vec(device, rng):
    M = rng.standard_normal((N, 4, 4))
    v = rng.standard_normal((N, 4)).astype(np.float32)
    mv, vm = np.zeros((N, 4), np.float32), np.zeros((N, 4), np.float32)
    KS.get(device, "mx_mat4_vec")(N, np_to_cols(M), v, mv, vm)
    M32 = M.astype(np.float32).astype(np.float64)
    assert_close(mv, np.einsum("nij,nj->ni", M32, v), rtol=1e-5, atol=1e-5)
    assert_close(vm, np.einsum("nj,nji->ni", v, M32), rtol=1e-5, atol=1e-5)


def test_mat4_mul(device, rng):
    A = rng.standard_normal((N, 4, 4)).astype(np.float32)
    B = rng.standard_normal((N, 4, 4)).astype(np.float32)
    c, t = np.zeros((N, 4, 4), np.float32), np.zeros((N, 4, 4), np.float32)
    KS.get(device, "mx_mat4_mul")(N, np_to_cols(A), np_to_cols(B), c, t)
    assert_close(cols_to_np(c), A.astype(np.float64) @ B, rtol=1e-5, atol=1e-5)
    assert_close(cols_to_np(t), np.swapaxes(A, 1, 2) + 2 * B, rtol=1e-6, atol=1e-6)


def test_mat3(device, rng):
    M = rng.standard_normal((N, 3, 3)).astype(np.float32)
    v = np.concatenate([rng.standard_normal((N, 3)), np.zeros((N, 1))], 1).astype(np.float32)
    mv = np.zeros((N, 4), np.float32)
    det = np.zeros(N, np.float32)
    sq = np.zeros((N, 3, 4), np.float32)
    KS.get(device, "mx_mat3")(N, np_to_cols(M, pad=4), v, mv, det, sq)
    M64 = M.astype(np.float64)
    assert_close(mv[:, :3], np.einsum("nij,nj->ni", M64, v[:, :3]), rtol=1e-5, atol=1e-5)
    assert_close(det, np.linalg.det(M64), rtol=1e-4, atol=1e-5)
    assert_close(cols_to_np(sq[:, :, :3]), M64 @ np.swapaxes(M64, 1, 2), rtol=1e-5, atol=1e-5)


def test_mat2(device, rng):
    M = rng.standard_normal((N, 2, 2)).astype(np.float32)
    M[:, 0, 0] += 3  # keep away from singular
    M[:, 1, 1] += 3
    v = rng.standard_normal((N, 2)).astype(np.float32)
    mv, det, inv = np.zeros((N, 2), np.float32), np.zeros(N, np.float32), np.zeros((N, 2, 2), np.float32)
    KS.get(device, "mx_mat2")(N, np_to_cols(M), v, mv, det, inv)
    M64 = M.astype(np.float64)
    assert_close(mv, np.einsum("nij,nj->ni", M64, v), rtol=1e-5, atol=1e-5)
    assert_close(det, np.linalg.det(M64), rtol=1e-5, atol=1e-5)
    assert_close(cols_to_np(inv), np.linalg.inv(M64), rtol=1e-4, atol=1e-5)


def test_construct(device, rng):
    s = rng.uniform(-2, 2, N).astype(np.float32)
    out = np.zeros((N, 4, 4), np.float32)
    det = np.zeros(N, np.float32)
    KS.get(device, "mx_construct")(N, s, out, det)
    x = s.astype(np.float64)
    rot = np.zeros((N, 4, 4))
    rot[:, 0, 0], rot[:, 1, 0], rot[:, 0, 1], rot[:, 1, 1] = np.cos(x), np.sin(x), -np.sin(x), np.cos(x)
    rot[:, 2, 2] = 1
    rot[:, :, 3] = [1, 2, 3, 1]
    scale = np.zeros((N, 4, 4))
    for k in range(3):
        scale[:, k, k] = x
    scale[:, 3, 3] = 1
    m = rot @ scale
    m[:, 1, 2] += 0.5  # column 2, row 1
    assert_close(cols_to_np(out), m, rtol=1e-5, atol=1e-5)
    assert_close(det, np.linalg.det(m), rtol=1e-4, atol=1e-5)


def test_nonsquare(device, rng):
    A = rng.standard_normal((N, 4, 3)).astype(np.float32)  # 4 rows, 3 columns
    v = np.concatenate([rng.standard_normal((N, 3)), np.zeros((N, 1))], 1).astype(np.float32)
    av = np.zeros((N, 4), np.float32)
    at = np.zeros((N, 4, 4), np.float32)   # float4x3: 4 columns of float3 (16 bytes each)
    ata = np.zeros((N, 3, 4), np.float32)  # float3x3
    KS.get(device, "mx_nonsquare")(N, np_to_cols(A), v, av, at, ata)
    A64 = A.astype(np.float64)
    assert_close(av, np.einsum("nij,nj->ni", A64, v[:, :3]), rtol=1e-5, atol=1e-5)
    assert_close(cols_to_np(at[:, :, :3]), np.swapaxes(A64, 1, 2), rtol=0, atol=0)
    assert_close(cols_to_np(ata[:, :, :3]), np.swapaxes(A64, 1, 2) @ A64, rtol=1e-5, atol=1e-5)


def test_half_matrix(device, rng):
    M = rng.uniform(-1, 1, (N, 4, 4)).astype(np.float16)
    v = rng.uniform(-1, 1, (N, 4)).astype(np.float16)
    mv = np.zeros((N, 4), np.float16)
    KS.get(device, "mx_half")(N, np.ascontiguousarray(np.swapaxes(M, 1, 2)), v, mv)
    assert_close(mv, np.einsum("nij,nj->ni", M.astype(np.float64), v.astype(np.float64)), rtol=1e-2, atol=1e-2)


def test_matrix_arith(device, rng):
    A = rng.standard_normal((N, 3, 3)).astype(np.float32)
    B = rng.standard_normal((N, 3, 3)).astype(np.float32)
    out = np.zeros((2 * N, 3, 4), np.float32)
    KS.get(device, "mx_arith")(N, np_to_cols(A, pad=4), np_to_cols(B, pad=4), out)
    out = out.reshape(N, 2, 3, 4)
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    assert_close(cols_to_np(out[:, 0, :, :3]), 4 * (B64 * 0.5), rtol=1e-5, atol=1e-5)
    assert_close(cols_to_np(out[:, 1, :, :3]), -(A64 @ B64), rtol=1e-5, atol=1e-5)


def test_small_nonsquare(device, rng):
    A = rng.standard_normal((N, 3, 2)).astype(np.float32)  # 3 rows, 2 columns
    v = rng.standard_normal((N, 2)).astype(np.float32)
    av = np.zeros((N, 4), np.float32)
    at = np.zeros((N, 3, 2), np.float32)
    atw = np.zeros((N, 2), np.float32)
    KS.get(device, "mx_small_nonsquare")(N, np_to_cols(A, pad=4), v, av, at, atw)
    A64 = A.astype(np.float64)
    assert_close(av[:, :3], np.einsum("nij,nj->ni", A64, v), rtol=1e-5, atol=1e-5)
    T = np.swapaxes(A64, 1, 2).copy()  # 2 rows, 3 columns
    T[:, 1, 2] += 1
    assert_close(cols_to_np(at), T, rtol=1e-6, atol=1e-6)
    assert_close(atw, T @ np.array([1.0, 2.0, 3.0]), rtol=1e-5, atol=1e-5)


def test_braced_list_columns(device, rng):
    N = 16
    v = rng.uniform(-2, 2, (N, 4)).astype(np.float32)
    out = np.zeros((N, 4), np.float32)
    det = np.zeros(N, np.float32)
    KS.get(device, "mx_braced_columns")(N, v, out, det)
    g = np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]], np.float32)  # symmetric: rows = columns
    r = np.array([[0, -1], [1, 0]], np.float32)                   # columns (0, 1) and (-1, 0)
    vh = v[:, :3].astype(np.float16).astype(np.float32)
    expect = vh @ g.T
    expect[:, :2] += v[:, :2] @ r.T
    assert_close(out[:, :3], expect, rtol=4e-3, atol=4e-2)        # g * v in half
    np.testing.assert_array_equal(det, 6.0 * np.arange(N, dtype=np.float32))
