// The CUDA queue's per-dispatch work (see cuda_queue.hpp): staging NumPy memory on
// the GPU, launching one dispatch as one or several kernel launches, and waiting
// before a result is copied back to host memory. The queue's ordering, events and
// stop logic live in cuda_queue.cpp.

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backends/cuda/cuda_compiler.hpp"
#include "backends/cuda/cuda_launch.hpp"
#include "backends/cuda/cuda_queue.hpp"
#include "core/interrupt.hpp"
#include "metalcall/errors.hpp"
#include "metalcall/interrupt.hpp"
#include "msl/targets/cuda_abi.hpp"

namespace metalcall::cuda {

CudaQueue::Staging CudaQueue::take_staging(std::size_t bytes) {
  bytes = std::max<std::size_t>(bytes, 16);
  {
    std::lock_guard<std::mutex> lock(mutex_);
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

void CudaQueue::copy_to_device(CUdeviceptr dst, const void* src, std::size_t n) {
  if (host_staging_->use_for(n)) {
    host_staging_->copy_in(dst, src, n);
    return;
  }
  // From pageable memory, the driver stages the copy itself and returns once it has read `src`.
  check(api().cuMemcpyHtoDAsync(dst, src, n, stream_), "copying an argument to the GPU");
}

void CudaQueue::copy_to_host(void* dst, CUdeviceptr src, std::size_t n) {
  if (host_staging_->use_for(n)) {
    host_staging_->copy_out(dst, src, n);
    return;
  }
  // To pageable memory the driver returns only once the copy is complete.
  check(api().cuMemcpyDtoHAsync(dst, src, n, stream_), "copying a result back from the GPU");
}

// Enqueues one dispatch (possibly several launches) on the stream.
void CudaQueue::enqueue(const DispatchCommand& command, std::vector<Staging>& staging, std::uint64_t ticket) {
  const auto launched = std::chrono::steady_clock::now();
  const auto& program = static_cast<const CudaProgram&>(*command.program);
  const KernelInfo& k = program.info();
  const Api& a = api();
  for (int d = 0; d < 3; ++d)
    if (command.grid[d] == 0) return;
  for (int d = 0; d < 3; ++d) {
    if (command.threadgroup[d] > props_.max_block[d]) {
      static const char* axis = "xyz";
      throw ArgumentError("kernel '" + k.name + "': a threadgroup of " + std::to_string(command.threadgroup[d]) +
                          " threads along " + axis[d] + " exceeds this GPU's limit of " +
                          std::to_string(props_.max_block[d]) + " (CUDA blocks are at most 1024 x 1024 x 64)");
    }
  }
  const std::size_t limit = parameter_limit(props_);
  if (program.block_bytes() > limit) {
    throw ArgumentError("kernel '" + k.name + "': its parameters take " + std::to_string(program.block_bytes()) +
                        " bytes (the values passed by value or as constant T&, 8 bytes per buffer, 56 for the grid) "
                        "but CUDA passes at most " + std::to_string(limit) +
                        " bytes to a kernel on this GPU and driver; pass large structs in a Buffer");
  }
  const std::vector<ParamSlotOffsets>& slots = program.slots();
  ParameterBlock block(program.block_bytes());
  std::size_t smem = 0;
  // Written host arguments: (host memory, its staging, bytes), copied back after the launches.
  struct CopyBack {
    void* host;
    CUdeviceptr device;
    std::size_t bytes;
  };
  std::vector<CopyBack> copy_back;
  bool aligned = true;  // every address in the block is 16-byte aligned (a coarsened launch needs it)
  auto put_pointer = [&](std::size_t i, void* p) {
    aligned = aligned && reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
    block.put(slots[i].pointer, &p, sizeof p, k.name);
  };
  for (std::size_t i = 0; i < command.args.size(); ++i) {
    const BoundArgument& arg = command.args[i];
    switch (arg.kind) {
      case ParamKind::builtin:
        break;
      case ParamKind::threadgroup_memory: {
        smem = (smem + 15) & ~std::size_t(15);
        const unsigned long long offset = smem;
        block.put(slots[i].value, &offset, sizeof offset, k.name);
        smem += arg.threadgroup_length;
        break;
      }
      case ParamKind::texture:
      case ParamKind::sampler:
        // Descriptors by value (core/texture.cpp); a texture's points at its managed memory.
        block.put(slots[i].value, arg.bytes.data(), arg.bytes.size(), k.name);
        break;
      default:
        if (arg.absent) break;  // left out by its function constant: the zeroed block holds null / zeros
        if (arg.buffer) {
          put_pointer(i, arg.address());  // a Buffer, or a view of one at its offset
        } else if (arg.host_data) {
          Staging st = take_staging(arg.host_nbytes);
          staging.push_back(st);
          if (arg.host_nbytes) copy_to_device(st.ptr, arg.host_data, arg.host_nbytes);
          put_pointer(i, reinterpret_cast<void*>(st.ptr));
          if (arg.written && arg.host_nbytes) copy_back.push_back({arg.host_data, st.ptr, arg.host_nbytes});
        } else if (slots[i].value < 0 && arg.kind == ParamKind::reference) {
          // A value over Metal's 4 KiB of inline bytes has no field (the translation's
          // metalcall_inline_value): it goes in device memory, as the Metal backend stages it.
          Staging st = take_staging(arg.bytes.size());
          staging.push_back(st);
          copy_to_device(st.ptr, arg.bytes.data(), arg.bytes.size());
          put_pointer(i, reinterpret_cast<void*>(st.ptr));
        } else {
          block.put(slots[i].value, arg.bytes.data(), arg.bytes.size(), k.name);
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
  metalcall_cuda_geometry L;
  L.ticket = ticket;
  for (int d = 0; d < 3; ++d) {
    const unsigned grid = command.grid[d], tg = command.threadgroup[d];
    L.grid[d] = grid;
    L.group[d] = tg;
    L.groups[d] = static_cast<unsigned>((std::uint64_t(grid) + tg - 1) / tg);
    L.origin[d] = 0;
    const unsigned whole = program.exact() ? grid / tg : L.groups[d];
    for (unsigned o = 0; o < whole;) {
      const unsigned n = std::min<unsigned>(whole - o, props_.max_grid[d]);
      segments[d].push_back({o, n, tg});
      o += n;
    }
    if (program.exact() && grid % tg) segments[d].push_back({whole, 1, grid % tg});
  }
  // The build with restrict buffers, unless this call's buffers overlap.
  const bool overlapping = buffers_overlap(command);
  const CUfunction fn = overlapping ? program.unrestricted_function() : program.function();
  void* params[] = {block.data()};
  // A kernel the translator proved coarsenable, on a 1-D grid large enough to fill the GPU with a
  // quarter of the threads: its coarsened entry point (cuda_abi.hpp), one launch.
  const CUfunction coarse = aligned && command.grid[1] == 1 && command.grid[2] == 1 &&
                                    command.grid[0] >= kCoarsenFrom
                                ? program.coarsened_function(overlapping)
                                : nullptr;
  if (coarse) {
    const std::uint64_t threads = (std::uint64_t(command.grid[0]) + msl::kCudaCoarsening - 1) / msl::kCudaCoarsening;
    const auto blocks = static_cast<unsigned>((threads + kCoarsenedBlock - 1) / kCoarsenedBlock);
    block.put(0, &L, sizeof L, k.name);
    const CUresult r = a.cuLaunchKernel(coarse, blocks, 1, 1, kCoarsenedBlock, 1, 1, 0, launch_stream_, params, nullptr);
    if (r != CUDA_SUCCESS) {
      throw ExecutionError("[cuda] launching kernel '" + k.name + "' (" + std::to_string(blocks) + " blocks of " +
                           std::to_string(kCoarsenedBlock) + ", " + std::to_string(msl::kCudaCoarsening) +
                           " threads each) failed: " + describe(r));
    }
    segments[0].clear();  // nothing more to launch
  }
  for (const auto& sx : segments[0])
    for (const auto& sy : segments[1])
      for (const auto& sz : segments[2]) {
        L.origin[0] = sx.origin;
        L.origin[1] = sy.origin;
        L.origin[2] = sz.origin;
        block.put(0, &L, sizeof L, k.name);  // the driver copies the block at each launch
        const CUresult r = a.cuLaunchKernel(fn, sx.count, sy.count, sz.count, sx.block, sy.block,
                                            sz.block, static_cast<unsigned>(smem), launch_stream_, params, nullptr);
        if (r != CUDA_SUCCESS) {
          throw ExecutionError("[cuda] launching kernel '" + k.name + "' (" + std::to_string(sx.count) + "x" +
                               std::to_string(sy.count) + "x" + std::to_string(sz.count) + " blocks of " +
                               std::to_string(sx.block) + "x" + std::to_string(sy.block) + "x" +
                               std::to_string(sz.block) + ", " + std::to_string(smem) +
                               " bytes of shared memory) failed: " + describe(r));
        }
      }
  // Synchronous (the call waits for host memory anyway), and per command, so that a
  // later command of the same batch reads what this one wrote; first the kernel, in a wait
  // that Ctrl-C and kernel_timeout can stop (the copy's own wait could not).
  if (!copy_back.empty() && ticket) wait_before_copy_back(ticket, k.name, launched);
  for (const auto& c : copy_back) copy_to_host(c.host, c.device, c.bytes);
}

void CudaQueue::wait_before_copy_back(std::uint64_t ticket, const std::string& kernel,
                                      std::chrono::steady_clock::time_point launched) {
  using Clock = std::chrono::steady_clock;
  const bool scoped = interrupt_check_installed();
  if (!scoped && kernel_timeout_ <= 0) return;  // nothing can stop it: copy_to_host waits
  const CUevent done = take_event(false);
  check(api().cuEventRecord(done, stream_), "cuEventRecord");
  const auto timeout = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kernel_timeout_));
  std::string reason;
  CUresult r;
  while ((r = api().cuEventQuery(done)) == CUDA_ERROR_NOT_READY) {
    const Clock::time_point now = Clock::now();
    if (reason.empty()) {
      if (scoped && interrupt_requested()) reason = "interrupted";
      else if (kernel_timeout_ > 0 && now - launched > timeout) reason = timeout_reason();
      // Its loops (and those of earlier calls still running, whose Completions then fail with
      // this reason) leave; the wait goes on until they have.
      if (!reason.empty()) stop(ticket, reason);
    }
    std::this_thread::sleep_for(poll_interval(now - launched, std::chrono::milliseconds(5)));
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    untimed_events_.push_back(done);
  }
  if (r != CUDA_SUCCESS || reason.empty()) return;  // an error shows in the copy and the submission
  if (reason == "interrupted") throw Interrupted();
  throw ExecutionError("[cuda] kernel '" + kernel + "' was stopped: " + reason);
}


}  // namespace metalcall::cuda
