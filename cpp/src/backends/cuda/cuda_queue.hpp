// The CUDA backend's queue: one stream per device; calls are launched in submission
// order, foreign host memory is staged through device memory around the call, and
// a submission's end event finishes its Completion (with the GPU time between its
// two events) on the calling thread when the caller waits, else on a completer thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/cuda/cuda_device.hpp"
#include "core/backend.hpp"

namespace metalcall::cuda {

class CudaQueue {
 public:
  CudaQueue(CUcontext ctx, const DeviceProps& props);

  void submit(std::vector<DispatchCommand>&& commands, const std::shared_ptr<CompletionState>& completion,
              bool caller_waits);
  /** A small call on an idle queue, launched and waited for on this thread; false leaves it to submit(). */
  bool run_now(const DispatchCommand& command, double* seconds);
  void synchronize();

 private:
  /** Device memory that stages foreign host memory for one call. */
  struct Staging {
    CUdeviceptr ptr = 0;
    std::size_t bytes = 0;
  };
  struct Submission {
    CUevent start = nullptr, end = nullptr;
    std::shared_ptr<CompletionState> completion;
    std::vector<DispatchCommand> commands;  // keeps programs and buffers alive until done
    std::vector<Staging> staging;
  };

  /** Enqueues `commands` between the submission's two events (launch_mutex_ held). */
  void launch(Submission& s, const DispatchCommand* commands, std::size_t count);
  /** Enqueues one dispatch (possibly several launches) on the stream. */
  void enqueue(const DispatchCommand& command, std::vector<Staging>& staging);
  CUevent take_event();
  void release(Submission& s);
  Staging take_staging(std::size_t bytes);
  std::exception_ptr wait_for(Submission& s, double* seconds);
  void finish(Submission& s);
  void completer_loop();

  CUcontext ctx_;
  const DeviceProps& props_;
  CUstream stream_ = nullptr;
  std::mutex launch_mutex_;  // launches in submission order
  std::mutex events_mutex_;
  std::vector<CUevent> events_;
  std::multimap<std::size_t, CUdeviceptr> staging_pool_;
  std::mutex queue_mutex_;
  std::condition_variable queue_cv_, idle_cv_;
  std::deque<Submission> pending_;
  std::size_t outstanding_ = 0;
  bool completer_started_ = false;
};

}  // namespace metalcall::cuda
