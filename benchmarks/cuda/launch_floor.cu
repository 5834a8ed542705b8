// The floor for a kernel call on this GPU, in plain CUDA C++ with no Python: what
// metalcall's CUDA call path is measured against (benchmarks/bench_cuda.py prints
// it beside metalcall, CuPy and torch). Also prices the events a call may record.
//   nvcc -O2 -o launch_floor benchmarks/cuda/launch_floor.cu -lcuda && ./launch_floor
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void one(float* x) {
  if (threadIdx.x == 0 && blockIdx.x == 0) x[0] += 1.0f;
}

#define CHECK(x)                                                                      \
  do {                                                                                \
    cudaError_t e = (x);                                                              \
    if (e != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s failed: %s\n", #x, cudaGetErrorString(e));             \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

template <class F>
double per_call_us(int n, F&& f) {
  std::vector<double> runs;
  for (int r = 0; r < 5; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) f();
    CHECK(cudaDeviceSynchronize());
    auto t1 = std::chrono::steady_clock::now();
    runs.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / n);
  }
  return *std::min_element(runs.begin(), runs.end());
}

int main() {
  float* x = nullptr;
  CHECK(cudaMalloc(&x, 4));
  CHECK(cudaMemset(x, 0, 4));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t timed[2], untimed;
  CHECK(cudaEventCreate(&timed[0]));
  CHECK(cudaEventCreate(&timed[1]));
  CHECK(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming));
  const int n = 20000;
  one<<<1, 1, 0, s>>>(x);
  CHECK(cudaStreamSynchronize(s));

  std::printf("%-58s %8s\n", "plain CUDA (runtime API), 1-thread kernel", "us/call");
  std::printf("%-58s %8.2f\n", "launch only (queue runs ahead), sync at the end",
              per_call_us(n, [&] { one<<<1, 1, 0, s>>>(x); }));
  std::printf("%-58s %8.2f\n", "launch + 1 untimed event record",
              per_call_us(n, [&] { one<<<1, 1, 0, s>>>(x); cudaEventRecord(untimed, s); }));
  std::printf("%-58s %8.2f\n", "launch + 2 timed event records",
              per_call_us(n, [&] { cudaEventRecord(timed[0], s); one<<<1, 1, 0, s>>>(x); cudaEventRecord(timed[1], s); }));
  std::printf("%-58s %8.2f\n", "launch + stream synchronize",
              per_call_us(n, [&] { one<<<1, 1, 0, s>>>(x); cudaStreamSynchronize(s); }));
  std::printf("%-58s %8.2f\n", "launch + untimed event record + event synchronize",
              per_call_us(n, [&] { one<<<1, 1, 0, s>>>(x); cudaEventRecord(untimed, s); cudaEventSynchronize(untimed); }));
  std::printf("%-58s %8.2f\n", "launch + timed event record + event synchronize",
              per_call_us(n, [&] { one<<<1, 1, 0, s>>>(x); cudaEventRecord(timed[1], s); cudaEventSynchronize(timed[1]); }));
  float ms = 0;
  std::printf("%-58s %8.2f\n", "2 timed events + launch + event sync + elapsed time",
              per_call_us(n, [&] {
                cudaEventRecord(timed[0], s);
                one<<<1, 1, 0, s>>>(x);
                cudaEventRecord(timed[1], s);
                cudaEventSynchronize(timed[1]);
                cudaEventElapsedTime(&ms, timed[0], timed[1]);
              }));
  std::printf("%-58s %8.2f\n", "cudaEventQuery of a finished event",
              per_call_us(n, [&] { cudaEventQuery(untimed); }));
  std::printf("%-58s %8.2f\n", "cudaStreamQuery of an idle stream",
              per_call_us(n, [&] { cudaStreamQuery(s); }));
  float host = 0;
  CHECK(cudaMemcpy(&host, x, 4, cudaMemcpyDeviceToHost));
  std::printf("result check: %s\n", host > 0 ? "ok" : "WRONG");
  return host > 0 ? 0 : 1;
}
