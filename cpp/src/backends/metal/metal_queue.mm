// The Metal queue: one MTLCommandQueue per device, one command buffer per submission
// (a call, or a whole batch), encoding with argument binding (host memory used in place
// or staged), and completion handlers that copy host memory back and finish Completions.
#if !__has_feature(objc_arc)
#error "metal_queue.mm needs ARC: compile it with -fobjc-arc (metal.cmake sets it)"
#endif

#include <Foundation/Foundation.h>
#include <Metal/Metal.h>
#include <malloc/malloc.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "backends/metal/metal_backend.hpp"
#include "core/interrupt.hpp"
#include "metalcall/errors.hpp"
#include "metalcall/interrupt.hpp"

namespace metalcall::metal {
namespace {

// Metal documents setBytes:length:atIndex: for data up to 4 KB; larger goes in a buffer.
constexpr std::size_t kMaxInlineBytes = 4096;
// Length of the buffer bound where Metal wants one and a call has no bytes.
constexpr std::size_t kEmptyBufferLength = 16;

/**
 * Staging buffers for host memory that cannot be used in place. Reused across calls so
 * repeated calls on the same NumPy arrays do not allocate; bounded in count and bytes.
 */
class StagingPool {
 public:
  explicit StagingPool(id<MTLDevice> device) : device_(device) {}

  id<MTLBuffer> acquire(std::size_t nbytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      // The smallest free buffer that fits without wasting more than half of it.
      auto best = free_.end();
      for (auto it = free_.begin(); it != free_.end(); ++it) {
        const std::size_t length = [*it length];
        if (length >= nbytes && length <= 2 * nbytes + kPage &&
            (best == free_.end() || length < [*best length]))
          best = it;
      }
      if (best != free_.end()) {
        id<MTLBuffer> buffer = *best;
        pooled_bytes_ -= [buffer length];
        free_.erase(best);
        return buffer;
      }
    }
    id<MTLBuffer> buffer = [device_ newBufferWithLength:round_up(nbytes, kPage)
                                                options:MTLResourceStorageModeShared];
    if (!buffer)
      throw Error("[metal] unable to allocate a " + std::to_string(nbytes) +
                  "-byte staging buffer for host memory: pass a metalcall Buffer (dev.empty) "
                  "or page-aligned memory, or free GPU memory");
    return buffer;
  }

  void release(id<MTLBuffer> buffer) {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::size_t length = [buffer length];
    if (free_.size() >= kMaxBuffers || pooled_bytes_ + length > kMaxBytes) return;  // let ARC free it
    free_.push_back(buffer);
    pooled_bytes_ += length;
  }

 private:
  static constexpr std::size_t kPage = 4096;
  static constexpr std::size_t kMaxBuffers = 16;
  static constexpr std::size_t kMaxBytes = std::size_t(64) << 20;

  id<MTLDevice> device_;
  std::mutex mutex_;
  std::vector<id<MTLBuffer>> free_;
  std::size_t pooled_bytes_ = 0;
};

/** What completion handlers share with the device; outlives it if work is still queued. */
struct QueueState {
  explicit QueueState(id<MTLDevice> device) : staging(device) {}

  void begin() {
    std::lock_guard<std::mutex> lock(mutex);
    ++in_flight;
  }
  void end() {
    std::lock_guard<std::mutex> lock(mutex);
    if (--in_flight == 0) idle.notify_all();
  }
  // Inside an InterruptScope (Ctrl-C), wakes every 20 ms to ask; Interrupted leaves the
  // work in flight (the GPU finishes it; completion handlers still run).
  // The check runs without the lock (it may take the GIL, which a thread that submits holds).
  void wait_idle() {
    const bool interruptible = interrupt_check_installed();
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex);
        if (!interruptible) {
          idle.wait(lock, [this] { return in_flight == 0; });
          return;
        }
        if (idle.wait_for(lock, std::chrono::milliseconds(20), [this] { return in_flight == 0; })) return;
      }
      if (interrupt_requested()) throw Interrupted();
    }
  }

  StagingPool staging;
  std::mutex mutex;
  std::condition_variable idle;
  std::size_t in_flight = 0;
};

/** One staging buffer of a submission; `host` is where to copy it back, if anywhere. */
struct Staged {
  id<MTLBuffer> buffer;
  void* host;
  std::size_t nbytes;
};

/** Everything one command buffer needs until the GPU is done with it. */
struct Submission {
  std::vector<DispatchCommand> commands;
  std::shared_ptr<CompletionState> completion;
  std::shared_ptr<QueueState> queue;
  std::vector<Staged> staged;

  void copy_back() const {
    for (const Staged& s : staged)
      if (s.host) std::memcpy(s.host, [s.buffer contents], s.nbytes);
  }
  void release_staging() {
    for (Staged& s : staged) queue->staging.release(s.buffer);
    staged.clear();
  }
};

std::string describe_failure(id<MTLCommandBuffer> done, const Submission& submission) {
  std::string kernels = "kernel";
  if (!submission.commands.empty()) {
    kernels += " '" + submission.commands.front().program->info().name + "'";
    if (submission.commands.size() > 1)
      kernels += " (or one of the " + std::to_string(submission.commands.size() - 1) +
                 " other calls of its batch)";
  }
  NSError* error = [done error];
  std::string text = "[metal] the GPU failed while running " + kernels + ": " +
                     from_utf8([[error localizedDescription] UTF8String]);
  switch ([error code]) {
    case MTLCommandBufferErrorPageFault:
    case MTLCommandBufferErrorInvalidResource:
      text += ". An access out of bounds is the usual cause: run the same call on "
              "mc.Device(\"cpu\", checked=True) to find it";
      break;
    case MTLCommandBufferErrorTimeout:
      text += ". The kernel ran longer than the GPU allows: split the grid over several calls";
      break;
    case MTLCommandBufferErrorOutOfMemory:
      text += ". The GPU ran out of memory: free buffers you no longer need, or use smaller ones";
      break;
    case MTLCommandBufferErrorNotPermitted:
    case MTLCommandBufferErrorDeviceRemoved:
      text += ". The GPU is no longer available to this process: open the device again";
      break;
    default:
      break;
  }
  return text;
}

// Runs on a Metal thread once the GPU has finished (or failed) a command buffer.
void complete(id<MTLCommandBuffer> done, const std::shared_ptr<Submission>& submission) {
  std::exception_ptr error;
  double seconds = 0;
  try {
    with_autorelease_pool([&] {
      if ([done status] == MTLCommandBufferStatusError) {
        error = std::make_exception_ptr(ExecutionError(describe_failure(done, *submission)));
        return;
      }
      seconds = [done GPUEndTime] - [done GPUStartTime];
      submission->copy_back();
    });
  } catch (...) {
    error = std::current_exception();
  }
  submission->release_staging();
  submission->commands.clear();  // free buffers and pipelines now, not when Metal drops the block
  submission->completion->finish(error, seconds);
  submission->queue->end();
}

// dispatchThreads: (partial last threadgroups) needs Apple4+ or Mac2 (Metal feature set tables).
bool has_nonuniform_threadgroups(id<MTLDevice> device) {
  return [device supportsFamily:MTLGPUFamilyApple4] || [device supportsFamily:MTLGPUFamilyMac2];
}

}  // namespace

class MetalQueue::Impl {
 public:
  Impl(id<MTLDevice> device, const DeviceInfo& info)
      : device_(device),
        queue_([device newCommandQueue]),
        info_(info),
        nonuniform_threadgroups_(has_nonuniform_threadgroups(device)),
        page_size_(static_cast<std::size_t>(sysconf(_SC_PAGESIZE))),
        empty_([device newBufferWithLength:kEmptyBufferLength options:MTLResourceStorageModeShared]),
        queue_state_(std::make_shared<QueueState>(device)) {
    if (!queue_ || !empty_)
      throw DeviceError("[metal] unable to create a command queue on " + info_.name +
                        ": the GPU may be busy or was removed; try again, or use mc.Device(\"cpu\")");
  }

  ~Impl() { queue_state_->wait_idle(); }

  void submit(std::vector<DispatchCommand>&& commands, const std::shared_ptr<CompletionState>& completion) {
    auto submission = std::make_shared<Submission>();
    submission->commands = std::move(commands);
    submission->completion = completion;
    submission->queue = queue_state_;
    try {
      with_autorelease_pool([&] { encode_and_commit(submission); });
    } catch (...) {
      // Nothing reached the GPU: settle the completion so that no one waits on it forever.
      submission->release_staging();
      completion->finish(std::current_exception(), 0);
      throw;
    }
  }

  void synchronize() { queue_state_->wait_idle(); }

 private:
  // The calls go into one compute pass, except that a call with staged textures (not 2-D,
  // or mipmapped: metal_texture.mm) gets a pass of its own between the blit passes that
  // copy its textures in and out. Metal orders the passes of a command buffer and tracks
  // the hazards between them (every resource here is tracked, the default).
  void encode_and_commit(std::shared_ptr<Submission> submission) {
    id<MTLCommandBuffer> command_buffer = [queue_ commandBuffer];
    if (!command_buffer) throw_unable_to_start();
    id<MTLComputeCommandEncoder> encoder = nil;  // the open compute pass, if any
    try {
      for (const DispatchCommand& command : submission->commands) {
        const MetalProgram& program = program_of(command);
        const StagedTextures staged((__bridge void*)device_, info_.registry_id, command, program.info());
        if (!staged.empty()) {
          if (encoder) [encoder endEncoding];
          encoder = nil;
          staged.encode_uploads((__bridge void*)command_buffer);
        }
        if (!encoder) encoder = [command_buffer computeCommandEncoder];
        if (!encoder) throw_unable_to_start();
        encode(encoder, command, program, *submission, staged);
        if (!staged.empty()) {
          [encoder endEncoding];
          encoder = nil;
          staged.encode_downloads((__bridge void*)command_buffer);
        }
      }
    } catch (...) {
      if (encoder) [encoder endEncoding];  // an encoder must be ended even when its command buffer is dropped
      throw;
    }
    if (encoder) [encoder endEncoding];
    [command_buffer addCompletedHandler:^(id<MTLCommandBuffer> done) {
      complete(done, submission);
    }];
    queue_state_->begin();
    [command_buffer commit];
  }

  [[noreturn]] void throw_unable_to_start() const {
    throw ExecutionError("[metal] unable to start a command buffer on " + info_.name +
                         ": the GPU may have been reset or removed; open the device again");
  }

  const MetalProgram& program_of(const DispatchCommand& command) const {
    const auto* program = dynamic_cast<const MetalProgram*>(command.program.get());
    if (!program)
      throw ArgumentError("kernel '" + command.program->info().name +
                          "' was built for another device: compile it on " + info_.name);
    return *program;
  }

  void encode(id<MTLComputeCommandEncoder> encoder, const DispatchCommand& command, const MetalProgram& program,
              Submission& submission, const StagedTextures& staged) {
    const KernelInfo& kernel = program.info();
    if (command.args.size() != kernel.params.size())
      throw ArgumentError("kernel '" + kernel.name + "' has " +
                          std::to_string(kernel.params.size()) + " parameters but the call bound " +
                          std::to_string(command.args.size()));
    [encoder setComputePipelineState:(__bridge id<MTLComputePipelineState>)program.pipeline()];
    std::size_t threadgroup_bytes = program.static_threadgroup_memory();
    for (std::size_t i = 0; i < command.args.size(); ++i) {
      const BoundArgument& arg = command.args[i];
      const ParamInfo& param = kernel.params[i];
      const auto index = static_cast<NSUInteger>(param.binding);
      if (arg.absent) continue;  // a false [[function_constant]]: not in the pipeline, nothing to bind
      switch (arg.kind) {
        case ParamKind::builtin:
          break;
        case ParamKind::threadgroup_memory:
          // Core has checked the length: non-zero and a multiple of 16 bytes, as Metal requires.
          threadgroup_bytes += arg.threadgroup_length;
          [encoder setThreadgroupMemoryLength:arg.threadgroup_length atIndex:index];
          break;
        case ParamKind::buffer:
        case ParamKind::reference:
        case ParamKind::value:
          bind_buffer(encoder, arg, param, kernel, index, submission);
          break;
        case ParamKind::texture:
          bind_texture((__bridge void*)encoder, arg, param, kernel, info_.registry_id, staged.texture(i));
          break;
        case ParamKind::sampler:
          bind_sampler((__bridge void*)encoder, (__bridge void*)device_, arg, param, kernel);
          break;
      }
    }
    if (threadgroup_bytes > info_.threadgroup_memory_length)
      throw ArgumentError("kernel '" + kernel.name + "' needs " + std::to_string(threadgroup_bytes) +
                          " bytes of threadgroup memory (" + std::to_string(program.static_threadgroup_memory()) +
                          " declared in the kernel, the rest from threadgroup_memory=) but " + info_.name + " has " +
                          std::to_string(info_.threadgroup_memory_length) + ": use less");
    dispatch(encoder, command, kernel);
  }

  void bind_buffer(id<MTLComputeCommandEncoder> encoder, const BoundArgument& arg, const ParamInfo& param,
                   const KernelInfo& kernel, NSUInteger index, Submission& submission) {
    if (arg.buffer) {
      const auto* storage = dynamic_cast<const MetalBufferStorage*>(arg.buffer.get());
      if (!storage || storage->registry_id() != info_.registry_id)
        throw ArgumentError("kernel '" + kernel.name + "' argument " + std::to_string(param.binding) + " '" +
                            param.name + "' is a buffer of another device: allocate it on " + info_.name);
      id<MTLBuffer> buffer = (__bridge id<MTLBuffer>)storage->buffer();
      [encoder setBuffer:buffer offset:0 atIndex:index];
    } else if (arg.host_data && arg.host_nbytes > 0) {
      bind_host_memory(encoder, arg, index, submission);
    } else if (!arg.bytes.empty()) {
      if (arg.bytes.size() <= kMaxInlineBytes) {
        [encoder setBytes:arg.bytes.data() length:arg.bytes.size() atIndex:index];
      } else {
        id<MTLBuffer> staging = queue_state_->staging.acquire(arg.bytes.size());
        std::memcpy([staging contents], arg.bytes.data(), arg.bytes.size());
        [encoder setBuffer:staging offset:0 atIndex:index];
        submission.staged.push_back({staging, nullptr, arg.bytes.size()});
      }
    } else {
      // Zero-length host memory: the kernel cannot read it, but Metal wants a buffer bound.
      [encoder setBuffer:empty_ offset:0 atIndex:index];
    }
  }

  // Page-aligned host memory is used in place (Metal maps its pages); the rest is copied
  // into a staging buffer and, when the kernel may write it, copied back on completion.
  void bind_host_memory(id<MTLComputeCommandEncoder> encoder, const BoundArgument& arg, NSUInteger index,
                        Submission& submission) {
    void* data = arg.host_data;
    const std::size_t nbytes = arg.host_nbytes;
    const bool aligned = reinterpret_cast<std::uintptr_t>(data) % page_size_ == 0;
    // Only when the allocation behind the pointer covers whole pages may the wrap round up.
    const std::size_t backing = aligned && nbytes % page_size_ != 0 ? malloc_size(data) : 0;
    if (const std::size_t length = no_copy_length(data, nbytes, page_size_, backing)) {
      id<MTLBuffer> wrapped = [device_ newBufferWithBytesNoCopy:data
                                                         length:length
                                                        options:MTLResourceStorageModeShared
                                                    deallocator:nil];
      if (wrapped) {  // the command buffer keeps it alive; the caller waits before freeing the memory
        [encoder setBuffer:wrapped offset:0 atIndex:index];
        return;
      }
    }
    id<MTLBuffer> staging = queue_state_->staging.acquire(nbytes);
    std::memcpy([staging contents], data, nbytes);
    [encoder setBuffer:staging offset:0 atIndex:index];
    submission.staged.push_back({staging, arg.written ? data : nullptr, nbytes});
  }

  void dispatch(id<MTLComputeCommandEncoder> encoder, const DispatchCommand& command, const KernelInfo& kernel) {
    // Core has checked the threadgroup against the pipeline's limit and skipped empty grids.
    const MTLSize grid = {command.grid[0], command.grid[1], command.grid[2]};
    const MTLSize group = {command.threadgroup[0], command.threadgroup[1], command.threadgroup[2]};
    auto shape = [](const MTLSize& s) {
      return "(" + std::to_string(s.width) + ", " + std::to_string(s.height) + ", " + std::to_string(s.depth) + ")";
    };
    if (nonuniform_threadgroups_) {
      [encoder dispatchThreads:grid threadsPerThreadgroup:group];
      return;
    }
    // Without nonuniform threadgroups only whole threadgroups run; the kernel must still
    // see the exact grid, so a grid that does not divide is refused rather than padded.
    if (grid.width % group.width || grid.height % group.height || grid.depth % group.depth)
      throw ArgumentError("kernel '" + kernel.name + "': " + info_.name + " runs whole threadgroups only, and grid " +
                          shape(grid) + " is not a multiple of threadgroup " + shape(group) +
                          ": pass threadgroup= with sizes that divide the grid");
    const MTLSize groups = {grid.width / group.width, grid.height / group.height, grid.depth / group.depth};
    [encoder dispatchThreadgroups:groups threadsPerThreadgroup:group];
  }

  id<MTLDevice> device_;
  id<MTLCommandQueue> queue_;
  DeviceInfo info_;
  bool nonuniform_threadgroups_;
  std::size_t page_size_;
  id<MTLBuffer> empty_;  // bound where Metal needs a buffer and the call has no bytes
  std::shared_ptr<QueueState> queue_state_;  // shared with completion handlers still to run
};

MetalQueue::MetalQueue(void* device, const DeviceInfo& info)
    : impl_(std::make_unique<Impl>((__bridge id<MTLDevice>)device, info)) {}

MetalQueue::~MetalQueue() = default;

// The completion handler copies host memory back and finishes the completion, so a
// caller about to wait needs nothing different.
void MetalQueue::submit(std::vector<DispatchCommand>&& commands, const std::shared_ptr<CompletionState>& completion) {
  impl_->submit(std::move(commands), completion);
}

void MetalQueue::synchronize() { impl_->synchronize(); }

}  // namespace metalcall::metal
