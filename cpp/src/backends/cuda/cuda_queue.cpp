// The CUDA backend's queue (see cuda_queue.hpp).
//
// Partial threadgroups: a kernel with barriers or SIMD-group functions is launched
// so that every block is exactly one threadgroup (the partial edge groups are
// separate launches with smaller blocks): MSL says threads outside the grid do not
// exist, and barriers and SIMD lanes must see exactly the group's threads. Other
// kernels are one launch whose out-of-grid threads return at once.
#include "backends/cuda/cuda_queue.hpp"

#include <algorithm>
#include <cstring>
#include <thread>

#include "backends/cuda/cuda_compiler.hpp"
#include "metalcall/errors.hpp"
#include "msl/cuda_abi.hpp"

namespace metalcall::cuda {

CudaQueue::CudaQueue(CUcontext ctx, const DeviceProps& props) : ctx_(ctx), props_(props) {
  make_current(ctx_);
  check(api().cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
}

void CudaQueue::launch(Submission& s, const DispatchCommand* commands, std::size_t count) {
  make_current(ctx_);
  s.start = take_event();
  s.end = take_event();
  try {
    check(api().cuEventRecord(s.start, stream_), "cuEventRecord");
    for (std::size_t i = 0; i < count; ++i) enqueue(commands[i], s.staging);
    check(api().cuEventRecord(s.end, stream_), "cuEventRecord");
  } catch (...) {
    // What was enqueued still runs: wait for it before the staging memory goes.
    api().cuStreamSynchronize(stream_);
    release(s);
    throw;
  }
}

void CudaQueue::submit(std::vector<DispatchCommand>&& commands, const std::shared_ptr<CompletionState>& completion,
                       bool caller_waits) {
  Submission s;
  s.completion = completion;
  {
    std::lock_guard<std::mutex> lock(launch_mutex_);
    launch(s, commands.data(), commands.size());
    s.commands = std::move(commands);
    if (!caller_waits) {
      std::lock_guard<std::mutex> q(queue_mutex_);
      pending_.push_back(std::move(s));
      ++outstanding_;
      if (!completer_started_) {
        completer_started_ = true;
        std::thread([this] { completer_loop(); }).detach();  // the device lives for the process
      }
      queue_cv_.notify_all();
      return;
    }
  }
  finish(s);
}

// A small call on an idle queue: launch and wait on this thread, skipping the
// completer thread's two hand-offs (the call is over in microseconds anyway).
bool CudaQueue::run_now(const DispatchCommand& command, double* seconds) {
  if (command.uses_host_memory()) return false;  // staging and copy-back go through submit()
  if (std::uint64_t(command.grid[0]) * command.grid[1] * command.grid[2] > (1u << 16)) return false;
  {
    std::lock_guard<std::mutex> q(queue_mutex_);
    if (outstanding_ != 0) return false;
  }
  Submission s;
  {
    std::lock_guard<std::mutex> lock(launch_mutex_);
    launch(s, &command, 1);
  }
  std::exception_ptr error = wait_for(s, seconds);
  release(s);
  if (error) std::rethrow_exception(error);
  return true;
}

void CudaQueue::synchronize() {
  make_current(ctx_);
  const CUresult r = api().cuStreamSynchronize(stream_);
  std::unique_lock<std::mutex> lock(queue_mutex_);
  idle_cv_.wait(lock, [&] { return outstanding_ == 0; });
  if (r != CUDA_SUCCESS) throw ExecutionError("[cuda] the GPU reported an error: " + describe(r));
}

CUevent CudaQueue::take_event() {
  {
    std::lock_guard<std::mutex> lock(events_mutex_);
    if (!events_.empty()) {
      CUevent e = events_.back();
      events_.pop_back();
      return e;
    }
  }
  CUevent e = nullptr;
  check(api().cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
  return e;
}

void CudaQueue::release(Submission& s) {
  {
    std::lock_guard<std::mutex> lock(events_mutex_);
    for (CUevent e : {s.start, s.end})
      if (e) events_.push_back(e);
    for (const auto& st : s.staging) staging_pool_.emplace(st.bytes, st.ptr);
    // Keep the pool small: large stagings are freed.
    while (staging_pool_.size() > 8) {
      auto last = std::prev(staging_pool_.end());
      api().cuMemFree(last->second);
      staging_pool_.erase(last);
    }
  }
  s.start = s.end = nullptr;
  s.staging.clear();
}

CudaQueue::Staging CudaQueue::take_staging(std::size_t bytes) {
  bytes = std::max<std::size_t>(bytes, 16);
  {
    std::lock_guard<std::mutex> lock(events_mutex_);
    auto it = staging_pool_.lower_bound(bytes);
    if (it != staging_pool_.end() && it->first <= bytes * 2) {
      Staging s{it->second, it->first};
      staging_pool_.erase(it);
      return s;
    }
  }
  Staging s;
  s.bytes = bytes;
  const CUresult r = api().cuMemAlloc(&s.ptr, bytes);
  if (r != CUDA_SUCCESS) {
    throw DeviceError("[cuda] cannot stage " + std::to_string(bytes) + " bytes of host memory on the GPU: " +
                      describe(r) + "; pass a metalcall Buffer instead");
  }
  return s;
}

// Waits for a submission's end event; its GPU time in *seconds, or the error.
std::exception_ptr CudaQueue::wait_for(Submission& s, double* seconds) {
  make_current(ctx_);
  const Api& a = api();
  *seconds = 0;
  const CUresult r = a.cuEventSynchronize(s.end);
  if (r != CUDA_SUCCESS) {
    return std::make_exception_ptr(ExecutionError(
        "[cuda] the kernel failed on the GPU: " + describe(r) +
        " (a fault such as an out-of-bounds access leaves the CUDA context unusable: restart the process; "
        "Device(\"cpu\", checked=True) finds the faulting access)"));
  }
  float ms = 0;
  if (a.cuEventElapsedTime(&ms, s.start, s.end) == CUDA_SUCCESS) *seconds = ms / 1000.0;
  return nullptr;
}

void CudaQueue::finish(Submission& s) {
  double seconds = 0;
  std::exception_ptr error = wait_for(s, &seconds);
  release(s);
  s.commands.clear();  // release programs and buffers before signalling
  s.completion->finish(error, seconds);
}

void CudaQueue::completer_loop() {
  for (;;) {
    Submission s;
    {
      std::unique_lock<std::mutex> lock(queue_mutex_);
      queue_cv_.wait(lock, [&] { return !pending_.empty(); });
      s = std::move(pending_.front());
      pending_.pop_front();
    }
    try {
      finish(s);
    } catch (...) {
      if (!s.completion->done()) s.completion->finish(std::current_exception(), 0);
    }
    {
      std::lock_guard<std::mutex> lock(queue_mutex_);
      --outstanding_;
    }
    idle_cv_.notify_all();
  }
}

// Enqueues one dispatch (possibly several launches) on the stream.
void CudaQueue::enqueue(const DispatchCommand& command, std::vector<Staging>& staging) {
  const auto& program = static_cast<const CudaProgram&>(*command.program);
  const KernelInfo& k = program.info();
  const Api& a = api();
  for (int d = 0; d < 3; ++d)
    if (command.grid[d] == 0) return;
  if (command.args.size() > METALCALL_CUDA_MAX_ARGS) {
    throw ArgumentError("kernel '" + k.name + "' has " + std::to_string(command.args.size()) +
                        " parameters; the CUDA backend takes at most " + std::to_string(METALCALL_CUDA_MAX_ARGS));
  }
  for (int d = 0; d < 3; ++d) {
    if (command.threadgroup[d] > props_.max_block[d]) {
      static const char* axis = "xyz";
      throw ArgumentError("kernel '" + k.name + "': a threadgroup of " + std::to_string(command.threadgroup[d]) +
                          " threads along " + axis[d] + " exceeds this GPU's limit of " +
                          std::to_string(props_.max_block[d]) + " (CUDA blocks are at most 1024 x 1024 x 64)");
    }
  }
  metalcall_cuda_launch L;
  std::memset(&L, 0, offsetof(metalcall_cuda_launch, data));
  std::size_t used = 0, smem = 0;
  std::vector<std::pair<void*, Staging>> copy_back;
  for (std::size_t i = 0; i < command.args.size(); ++i) {
    const BoundArgument& arg = command.args[i];
    switch (arg.kind) {
      case ParamKind::builtin:
        break;
      case ParamKind::threadgroup_memory:
        smem = (smem + 15) & ~std::size_t(15);
        L.args[i] = reinterpret_cast<void*>(smem);
        L.arg_bytes[i] = arg.threadgroup_length;
        smem += arg.threadgroup_length;
        break;
      default:
        if (arg.buffer) {
          L.args[i] = arg.buffer->data();
          L.arg_bytes[i] = arg.buffer->nbytes();
        } else if (arg.host_data) {
          Staging st = take_staging(arg.host_nbytes);
          staging.push_back(st);
          if (arg.host_nbytes)
            check(a.cuMemcpyHtoDAsync(st.ptr, arg.host_data, arg.host_nbytes, stream_), "copying an argument to the GPU");
          L.args[i] = reinterpret_cast<void*>(st.ptr);
          L.arg_bytes[i] = arg.host_nbytes;
          if (arg.written && arg.host_nbytes) copy_back.emplace_back(arg.host_data, st);
        } else {
          used = (used + 15) & ~std::size_t(15);
          if (used + arg.bytes.size() > METALCALL_CUDA_INLINE_BYTES) {
            throw ArgumentError("kernel '" + k.name + "': the arguments passed by value take more than " +
                                std::to_string(METALCALL_CUDA_INLINE_BYTES) +
                                " bytes on the CUDA backend; pass large structs in a Buffer");
          }
          std::memcpy(L.data + used, arg.bytes.data(), arg.bytes.size());
          L.args[i] = reinterpret_cast<void*>(used);
          L.arg_bytes[i] = arg.bytes.size();
          L.inline_mask |= 1ull << i;
          used += arg.bytes.size();
        }
    }
  }
  if (smem + program.static_smem() > props_.smem_optin) {
    throw ArgumentError("kernel '" + k.name + "': " + std::to_string(smem) + " bytes of threadgroup memory plus the " +
                        std::to_string(program.static_smem()) + " bytes the kernel declares exceed the " +
                        std::to_string(props_.smem_optin) + " bytes a block may have on " + props_.info.name);
  }
  // Launch segments per dimension: (first group, group count, block size).
  struct Segment {
    unsigned origin, count, block;
  };
  std::vector<Segment> segments[3];
  for (int d = 0; d < 3; ++d) {
    const unsigned grid = command.grid[d], tg = command.threadgroup[d];
    L.grid[d] = grid;
    L.group[d] = tg;
    L.groups[d] = static_cast<unsigned>((std::uint64_t(grid) + tg - 1) / tg);
    const unsigned whole = program.exact() ? grid / tg : L.groups[d];
    for (unsigned o = 0; o < whole;) {
      const unsigned n = std::min<unsigned>(whole - o, props_.max_grid[d]);
      segments[d].push_back({o, n, tg});
      o += n;
    }
    if (program.exact() && grid % tg) segments[d].push_back({whole, 1, grid % tg});
  }
  void* params[] = {&L};
  for (const auto& sx : segments[0])
    for (const auto& sy : segments[1])
      for (const auto& sz : segments[2]) {
        L.origin[0] = sx.origin;
        L.origin[1] = sy.origin;
        L.origin[2] = sz.origin;
        const CUresult r = a.cuLaunchKernel(program.function(), sx.count, sy.count, sz.count, sx.block, sy.block,
                                            sz.block, static_cast<unsigned>(smem), stream_, params, nullptr);
        if (r != CUDA_SUCCESS) {
          throw ExecutionError("[cuda] launching kernel '" + k.name + "' (" + std::to_string(sx.count) + "x" +
                               std::to_string(sy.count) + "x" + std::to_string(sz.count) + " blocks of " +
                               std::to_string(sx.block) + "x" + std::to_string(sy.block) + "x" +
                               std::to_string(sz.block) + ", " + std::to_string(smem) +
                               " bytes of shared memory) failed: " + describe(r));
        }
      }
  for (const auto& [host, st] : copy_back) {
    std::size_t n = 0;
    for (const auto& arg : command.args)
      if (arg.host_data == host) n = arg.host_nbytes;
    check(a.cuMemcpyDtoHAsync(host, st.ptr, n, stream_), "copying a result back from the GPU");
  }
}

}  // namespace metalcall::cuda
