"""A source's own types named like MSL's, reached through their namespace (MNN's int8 and int4
weight blocks: `typedef struct char4x4 { char4 v[4]; ... } char4x4;` inside `namespace MNN`,
read as `const device MNN::char4x4* wt`). MSL has no char matrices; the rule that pointer types
name their address space (docs/msl-rules.md) took `MNN::char4x4*` for a builtin type's pointer
with no space, its `device` being before the namespace's name, and refused MNN's 1x1
convolutions on every backend. Each kernel is checked against NumPy on every device."""

from __future__ import annotations

import numpy as np

from mcconf import HEADER, compile_once

SOURCE = HEADER + """
namespace stq {
  typedef struct char4x4 {
   private:
    char4 v[4];
   public:
    inline const thread char4& operator[](const int k) const { return v[k]; }
    inline const device char4& operator[](const int k) const device { return v[k]; }
    inline explicit operator float4x4() const device {
      return float4x4(float4(v[0]), float4(v[1]), float4(v[2]), float4(v[3]));
    }
  } char4x4;
  struct uchar4x2 { uchar2 v[4]; };  // four rows of four 4-bit weights
  namespace inner { struct half2x3 { half h[6]; }; }
}

float4 stq_row(const thread stq::char4x4* w, int r) { return float4((*w)[r]); }

float4 stq_nibbles(const device stq::uchar4x2* w, int r) {
  uchar2 b = w->v[r];
  return float4(b.x & 15, b.x >> 4, b.y & 15, b.y >> 4) - 8.0f;
}

kernel void stq_dequant(const device stq::char4x4* wt [[buffer(0)]],
                        const device stq::uchar4x2* wq [[buffer(1)]],
                        const device float4* x [[buffer(2)]],
                        device float4* rows [[buffer(3)]],
                        device float4* cols [[buffer(4)]],
                        device float4* q4 [[buffer(5)]],
                        device float* sums [[buffer(6)]],
                        const device stq::inner::half2x3* h [[buffer(7)]],
                        uint i [[thread_position_in_grid]]) {
  stq::char4x4 local = wt[i];
  thread stq::char4x4* lp = &local;
  rows[i] = float4(dot(stq_row(lp, 0), x[i]), dot(stq_row(lp, 1), x[i]),
                   dot(stq_row(lp, 2), x[i]), dot(stq_row(lp, 3), x[i]));
  cols[i] = float4x4(wt[i]) * x[i];
  const device stq::uchar4x2* q = wq + i;
  q4[i] = float4(dot(stq_nibbles(q, 0), x[i]), dot(stq_nibbles(q, 1), x[i]),
                 dot(stq_nibbles(q, 2), x[i]), dot(stq_nibbles(q, 3), x[i]));
  float s = 0.0f;
  for (int k = 0; k < 6; ++k) s += float(h[i].h[k]);
  sums[i] = s;
}
"""


def test_namespaced_weight_blocks(device, rng):
    n = 37
    wt = rng.integers(-128, 128, size=(n, 4, 4), dtype=np.int8)
    wq = rng.integers(0, 256, size=(n, 4, 2), dtype=np.uint8)
    x = rng.integers(-8, 9, size=(n, 4)).astype(np.float32)
    h = rng.integers(-64, 64, size=(n, 6)).astype(np.float16)
    rows, cols, q4 = (np.zeros((n, 4), np.float32) for _ in range(3))
    sums = np.zeros(n, np.float32)
    compile_once(device, SOURCE).function("stq_dequant")(n, wt, wq, x, rows, cols, q4, sums, h)
    w = wt.astype(np.float32)
    np.testing.assert_array_equal(rows, np.einsum("irc,ic->ir", w, x))
    # float4x4(c0, c1, c2, c3) takes columns: m * x sums the columns weighted by x.
    np.testing.assert_array_equal(cols, np.einsum("icr,ic->ir", w, x))
    nib = np.stack([wq[..., 0] & 15, wq[..., 0] >> 4, wq[..., 1] & 15, wq[..., 1] >> 4], axis=-1).astype(np.float32) - 8
    np.testing.assert_array_equal(q4, np.einsum("irc,ic->ir", nib, x))
    np.testing.assert_array_equal(sums, h.astype(np.float32).sum(axis=1))
