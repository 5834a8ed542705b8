// Four of MSL's 8x8x8 half products into one accumulator in one sparse tensor-core
// operation, mma.sp.m16n8k32 (2:4 structured sparsity): the top 8 rows of its A take
// two products (k 0-7 and 8-15 of the compressed A), the bottom 8 rows two others, and
// the metadata sends each row's values to disjoint K positions, so the four products
// may have four different B matrices. The accumulator holds two partial sums, rows 0-7
// and 8-15 of mma's D, in the same lanes: its value is their sum.
//   nvcc -arch=sm_90 -O3 -o mma_sparse benchmarks/cuda/mma_sparse.cu && ./mma_sparse
// Prints: (1) which lanes and bits of the metadata govern which rows and groups,
// (2) whether the four-product scheme matches a float64 reference for two metadata
// layouts, (3) the rate of sparse and dense mma, registers only.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_fp16.h>

#define CHECK(x)                                                                 \
  do {                                                                           \
    cudaError_t e_ = (x);                                                        \
    if (e_ != cudaSuccess) {                                                     \
      std::printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));     \
      std::exit(1);                                                              \
    }                                                                            \
  } while (0)

__device__ __forceinline__ void mma_sp(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[4], unsigned e) {
  asm volatile(
      "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9,%10,%11}, {%0,%1,%2,%3}, %12, 0x0;"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(e));
}

__device__ unsigned pack(float lo, float hi) {
  __half2 h = __floats2half2_rn(lo, hi);
  unsigned u;
  memcpy(&u, &h, 4);
  return u;
}

// (1) Probe: B[k][n] = k; compressed A one-hot in column j for every row; metadata
// 0x44444444 everywhere (each group: positions 0 and 1) except nibble q of lane L set to
// 0xE (positions 2 and 3). D[r][n] = the K position of row r's compressed column j.
// out[((L * 8 + q) * 16 + j) * 16 + r] = D[r][0].
__global__ void probe(float* out) {
  const unsigned lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  unsigned b[4];
  for (int i = 0; i < 4; ++i) b[i] = pack(float(8 * i + 2 * t), float(8 * i + 2 * t + 1));
  for (int L = 0; L < 32; ++L)
    for (int q = 0; q < 8; ++q) {
      unsigned e = 0x44444444u;
      if (int(lane) == L) e = (e & ~(0xFu << (4 * q))) | (0xEu << (4 * q));
      for (int j = 0; j < 16; ++j) {
        // a0: row g cols 2t,2t+1; a1: row g+8 same; a2: row g cols 8+2t..; a3: row g+8.
        unsigned a[4];
        for (int r = 0; r < 4; ++r) {
          const int c0 = 2 * int(t) + (r >= 2 ? 8 : 0);
          a[r] = pack(c0 == j ? 1.0f : 0.0f, c0 + 1 == j ? 1.0f : 0.0f);
        }
        float d[4] = {0, 0, 0, 0};
        mma_sp(d, a, b, e);
        if (t == 0) {  // column 0 of D: rows g (d0) and g+8 (d2)
          float* o = out + ((L * 8 + q) * 16 + j) * 16;
          o[g] = d[0];
          o[g + 8] = d[2];
        }
      }
    }
}

// (2) The scheme: A1..A4 and B1..B4 are 8x8 half matrices (row-major, A then B, 64 each).
// Each lane reads them in the layouts metalcall's prelude keeps: A word = row g, cols 2t
// and 2t+1; B word = its transpose's: rows 2t and 2t+1 of column g.
//   a0..a3 = A1, A3, A2, A4 words of lane 4g + perm(t), perm swapping t = 1 and 2;
//   b[t&1] = own B1, b[1-(t&1)] = B3 of lane ^ 1, b[2+(t&1)] = own B2, b[3-(t&1)] = B4 of lane ^ 1;
//   metadata `e` (two candidates). out[64 * lane-independent] = the 8x8 sum of the four.
__global__ void scheme(const __half* m, float* out, unsigned e_top_bottom_split, int layout) {
  const unsigned lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  const unsigned pt = (t == 1) ? 2 : (t == 2 ? 1 : t);
  auto aword = [&](int p, unsigned tt) {  // A_p row g, cols 2tt, 2tt+1
    const __half* A = m + 128 * p;
    __half2 h = __halves2half2(A[g * 8 + 2 * tt], A[g * 8 + 2 * tt + 1]);
    unsigned u;
    memcpy(&u, &h, 4);
    return u;
  };
  auto bword = [&](int p, unsigned tt) {  // B_p rows 2tt, 2tt+1 of column g
    const __half* B = m + 128 * p + 64;
    __half2 h = __halves2half2(B[(2 * tt) * 8 + g], B[(2 * tt + 1) * 8 + g]);
    unsigned u;
    memcpy(&u, &h, 4);
    return u;
  };
  unsigned a[4] = {aword(0, pt), aword(2, pt), aword(1, pt), aword(3, pt)};
  unsigned b[4];
  b[t & 1] = bword(0, t);
  b[1 - (t & 1)] = bword(2, t ^ 1);
  b[2 + (t & 1)] = bword(1, t);
  b[3 - (t & 1)] = bword(3, t ^ 1);
  unsigned e;
  if (layout == 1) e = e_top_bottom_split;                 // H1: lane 4g+s: row g (low 16), g+8 (high 16), groups 4s..4s+3
  else e = (t & 1) ? 0x44EE44EEu : 0xEE44EE44u;            // H2: lane 4g: row g, all groups; 4g+1: row g+8
  float d[4] = {0, 0, 0, 0};
  mma_sp(d, a, b, e);
  const unsigned r = g, c = 2 * t;
  out[r * 8 + c] = d[0] + d[2];
  out[r * 8 + c + 1] = d[1] + d[3];
}

__global__ void rate_sparse(float* out, int n) {
  unsigned a = (threadIdx.x * 2654435761u) & 0x3bff3bffu, b = a ^ 0x1234u;
  float c[8][4] = {};
  const unsigned e = 0x44EEEE44u;
  for (int i = 0; i < n; i++) {
#pragma unroll
    for (int j = 0; j < 8; j++)
      asm volatile(
          "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
          "{%8,%9,%10,%11}, {%0,%1,%2,%3}, %12, 0x0;"
          : "+f"(c[j][0]), "+f"(c[j][1]), "+f"(c[j][2]), "+f"(c[j][3])
          : "r"(a), "r"(a + 1), "r"(a + 2), "r"(a + 3), "r"(b + j), "r"(b), "r"(b + 1), "r"(b + 2), "r"(e));
  }
  float s = 0;
  for (int j = 0; j < 8; j++) s += c[j][0] + c[j][1] + c[j][2] + c[j][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

__global__ void rate_dense(float* out, int n) {
  unsigned a = (threadIdx.x * 2654435761u) & 0x3bff3bffu, b = a ^ 0x1234u;
  float c[8][4] = {};
  for (int i = 0; i < n; i++) {
#pragma unroll
    for (int j = 0; j < 8; j++)
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                   : "+f"(c[j][0]), "+f"(c[j][1]), "+f"(c[j][2]), "+f"(c[j][3])
                   : "r"(a), "r"(a + 1), "r"(a + 2), "r"(a + 3), "r"(b + j), "r"(b));
  }
  float s = 0;
  for (int j = 0; j < 8; j++) s += c[j][0] + c[j][1] + c[j][2] + c[j][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

int main() {
  float* dprobe;
  const int nprobe = 32 * 8 * 16 * 16;
  CHECK(cudaMalloc(&dprobe, nprobe * sizeof(float)));
  probe<<<1, 32>>>(dprobe);
  CHECK(cudaGetLastError());
  static float hp[32 * 8 * 16 * 16];
  CHECK(cudaMemcpy(hp, dprobe, sizeof hp, cudaMemcpyDeviceToHost));
  // Base mapping: position of compressed column j = 4 * (j / 2) + j % 2.
  std::printf("metadata probe: lane nibble -> rows whose groups moved (group list)\n");
  int bad_base = 0;
  for (int L = 0; L < 32; ++L)
    for (int q = 0; q < 8; ++q) {
      char line[512];
      int len = 0, any = 0;
      for (int r = 0; r < 16; ++r) {
        int moved_groups = 0;
        for (int j = 0; j < 16; ++j) {
          const float v = hp[((L * 8 + q) * 16 + j) * 16 + r];
          const int base = 4 * (j / 2) + j % 2;
          if (v != float(base)) {
            if (v == float(base + 2)) moved_groups |= 1 << (j / 2);
            else bad_base++;
          }
        }
        if (moved_groups) {
          any = 1;
          len += std::snprintf(line + len, sizeof line - len, " r%d:g%x", r, moved_groups);
        }
      }
      if (any) std::printf("  lane %2d nibble %d:%s\n", L, q, line);
    }
  std::printf("  unexpected values: %d\n", bad_base);

  // (2) the scheme against a float64 reference.
  __half hm[512];
  float fm[512];
  srand(1);
  for (int i = 0; i < 512; ++i) {
    fm[i] = float((rand() % 2001) - 1000) / 1000.0f;
    hm[i] = __float2half(fm[i]);
    fm[i] = __half2float(hm[i]);
  }
  double ref[64] = {};
  for (int p = 0; p < 4; ++p)
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 8; ++c)
        for (int k = 0; k < 8; ++k) ref[r * 8 + c] += double(fm[128 * p + r * 8 + k]) * fm[128 * p + 64 + k * 8 + c];
  __half* dm;
  float* dout;
  CHECK(cudaMalloc(&dm, sizeof hm));
  CHECK(cudaMalloc(&dout, 64 * sizeof(float)));
  CHECK(cudaMemcpy(dm, hm, sizeof hm, cudaMemcpyHostToDevice));
  for (int layout = 1; layout <= 2; ++layout) {
    scheme<<<1, 32>>>(dm, dout, 0x44EEEE44u, layout);
    CHECK(cudaGetLastError());
    float h[64];
    CHECK(cudaMemcpy(h, dout, sizeof h, cudaMemcpyDeviceToHost));
    double err = 0, nrm = 0;
    for (int i = 0; i < 64; ++i) {
      err += (h[i] - ref[i]) * (h[i] - ref[i]);
      nrm += ref[i] * ref[i];
    }
    std::printf("scheme, metadata layout H%d: relative error %.3g\n", layout, std::sqrt(err / nrm));
  }

  const int blocks = 1056, threads = 256, n = 2000;
  float* out;
  CHECK(cudaMalloc(&out, blocks * threads * sizeof(float)));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  const double mmas = blocks * (threads / 32.0) * n * 8;
  for (int rep = 0; rep < 3; rep++) {
    float ms;
    cudaEventRecord(e0);
    rate_sparse<<<blocks, threads>>>(out, n);
    cudaEventRecord(e1);
    CHECK(cudaEventSynchronize(e1));
    cudaEventElapsedTime(&ms, e0, e1);
    std::printf("sparse m16n8k32: %.1f TFLOP/s of products (4 8x8x8 each)\n", mmas * 4096 / ms / 1e9);
    cudaEventRecord(e0);
    rate_dense<<<blocks, threads>>>(out, n);
    cudaEventRecord(e1);
    CHECK(cudaEventSynchronize(e1));
    cudaEventElapsedTime(&ms, e0, e1);
    std::printf("dense m16n8k16: %.1f TFLOP/s\n", mmas * 4096 / ms / 1e9);
  }
  CHECK(cudaDeviceSynchronize());
  return 0;
}
