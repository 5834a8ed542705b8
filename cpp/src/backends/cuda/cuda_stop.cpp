// The stop word of a CUDA context (see cuda_stop.hpp).
#include "backends/cuda/cuda_stop.hpp"

#include "backends/cuda/cuda_device.hpp"

namespace metalcall::cuda {

StopWord::StopWord(CUcontext ctx) : ctx_(ctx) {
  const Api& a = api();
  make_current(ctx_);
  check(a.cuMemAlloc(&word_, sizeof(std::uint64_t)), "allocating the stop word (cuMemAlloc)");
  check(a.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  void* host = nullptr;
  check(a.cuMemAllocHost(&host, 2 * sizeof(std::uint64_t)), "cuMemAllocHost");
  staging_ = static_cast<std::uint64_t*>(host);
  std::lock_guard<std::mutex> lock(mutex_);
  write(word_, 0);
}

void StopWord::write(CUdeviceptr to, std::uint64_t value) {
  staging_[0] = value;
  check(api().cuMemcpyHtoDAsync(to, staging_, sizeof(std::uint64_t), stream_), "writing the stop word");
  check(api().cuStreamSynchronize(stream_), "writing the stop word");
}

void StopWord::attach(CUmodule module) {
  CUdeviceptr global = 0;
  std::size_t bytes = 0;
  make_current(ctx_);
  if (api().cuModuleGetGlobal(&global, &bytes, module, "__metalcall_stop_word") != CUDA_SUCCESS ||
      bytes != sizeof(CUdeviceptr))
    return;
  std::lock_guard<std::mutex> lock(mutex_);
  write(global, word_);
}

void StopWord::raise(std::uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (ticket <= value_) return;
  value_ = ticket;
  make_current(ctx_);
  write(word_, ticket);
}

std::uint64_t StopWord::value() {
  std::lock_guard<std::mutex> lock(mutex_);
  return value_;
}

void StopWord::read(void* dst, CUdeviceptr src, std::size_t n, const std::string& what) {
  std::lock_guard<std::mutex> lock(mutex_);
  make_current(ctx_);
  CUresult r = api().cuMemcpyDtoHAsync(dst, src, n, stream_);
  if (r == CUDA_SUCCESS) r = api().cuStreamSynchronize(stream_);
  check(r, what);
}

}  // namespace metalcall::cuda
