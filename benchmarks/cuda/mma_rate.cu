// The ceiling of a GEMM built from MSL's 8x8 SIMD-group matrix products on CUDA: the
// rate of mma.sync.m16n8k8 with rows 8-15 of A zero (one product per instruction, what
// metalcall's prelude issues unpaired) and of a full mma.sync.m16n8k16 (half of it is
// useful when two products are paired, METALCALL_SGM_PAIR_PRODUCTS). Registers only, 8
// independent accumulators a warp, 8 warps a block, 8 blocks an SM of an H100.
//   nvcc -arch=sm_90 -O3 -o mma_rate benchmarks/cuda/mma_rate.cu && ./mma_rate
#include <cstdio>

__global__ void m16n8k8(float* out, int n) {
  unsigned a = (threadIdx.x * 2654435761u) & 0x3bff3bffu, b = a ^ 0x1234u;  // halves below 1
  float c[8][4] = {};
  for (int i = 0; i < n; i++) {
#pragma unroll
    for (int j = 0; j < 8; j++)
      asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
                   : "+f"(c[j][0]), "+f"(c[j][1]), "+f"(c[j][2]), "+f"(c[j][3])
                   : "r"(a), "r"(0u), "r"(b + j));
  }
  float s = 0;
  for (int j = 0; j < 8; j++) s += c[j][0] + c[j][1] + c[j][2] + c[j][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

__global__ void m16n8k16(float* out, int n) {
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
  const int blocks = 1056, threads = 256, n = 2000;
  float* out;
  cudaMalloc(&out, blocks * threads * sizeof(float));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  const double mmas = blocks * (threads / 32.0) * n * 8;
  for (int rep = 0; rep < 3; rep++) {  // the first round warms up
    float ms;
    cudaEventRecord(e0);
    m16n8k8<<<blocks, threads>>>(out, n);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    cudaEventElapsedTime(&ms, e0, e1);
    std::printf("m16n8k8 (rows 8-15 of A zero): %.1f TFLOP/s issued, %.1f TFLOP/s of 8x8x8 products\n",
                mmas * 2048 / ms / 1e9, mmas * 1024 / ms / 1e9);
    cudaEventRecord(e0);
    m16n8k16<<<blocks, threads>>>(out, n);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    cudaEventElapsedTime(&ms, e0, e1);
    std::printf("m16n8k16 (full): %.1f TFLOP/s\n", mmas * 4096 / ms / 1e9);
  }
  std::printf("%s\n", cudaGetErrorString(cudaDeviceSynchronize()));
  return 0;
}
