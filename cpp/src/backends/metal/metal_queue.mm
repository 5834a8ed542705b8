// The Metal queue: one MTLCommandQueue per device. It issues the Metal calls of a plan
// (backends/metal_plan/plan.hpp), one per step, and decides nothing: which buffers, copies,
// passes and dispatches a submission needs is the planner's business. A completion handler
// copies staged host memory back and finishes the submission's Completion.
#if !__has_feature(objc_arc)
#error "metal_queue.mm needs ARC: compile it with -fobjc-arc (metal.cmake sets it)"
#endif

#include <Foundation/Foundation.h>
#include <Metal/Metal.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "backends/metal/metal_backend.hpp"
#include "backends/metal_plan/command_buffer_end.hpp"
#include "backends/metal_plan/staging_pool.hpp"
#include "core/interrupt.hpp"
#include "metalcall/errors.hpp"
#include "metalcall/interrupt.hpp"

namespace metalcall::metal {
namespace {

/** Staging MTLBuffers, kept for reuse as the pool's policy says (metal_plan/staging_pool.hpp). */
class StagingBuffers {
 public:
  explicit StagingBuffers(id<MTLDevice> device) : device_(device) {}

  id<MTLBuffer> acquire(std::size_t nbytes) {
    if (auto kept = pool_.take(nbytes)) return kept->first;
    const std::size_t length = StagingPool<id<MTLBuffer>>::allocation_length(nbytes);
    id<MTLBuffer> buffer = [device_ newBufferWithLength:length options:MTLResourceStorageModeShared];
    if (!buffer)
      throw Error("[metal] unable to allocate a " + std::to_string(length) +
                  "-byte staging buffer for host memory: free GPU memory, or pass a metalcall Buffer (dev.empty)");
    return buffer;
  }

  void release(id<MTLBuffer> buffer) { pool_.give_back(buffer, [buffer length]); }  // if full, ARC frees it

 private:
  id<MTLDevice> device_;
  StagingPool<id<MTLBuffer>> pool_;
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

  StagingBuffers staging;
  std::mutex mutex;
  std::condition_variable idle;
  std::size_t in_flight = 0;
};

/** One command buffer: its plan and the Metal objects the plan's buffers and textures became. */
struct Submission {
  Plan plan;
  std::shared_ptr<CompletionState> completion;
  std::shared_ptr<QueueState> queue;
  std::vector<id<MTLBuffer>> buffers;   // one per plan buffer
  std::vector<id<MTLBuffer>> staging;   // those of them taken from the pool
  std::vector<id<MTLTexture>> textures;  // one per plan texture

  void copy_back() const {
    for (const CopyBack& c : plan.copy_backs)
      std::memcpy(c.host, static_cast<const char*>([buffers[c.buffer] contents]) + c.offset, c.length);
  }
  void release() {
    for (id<MTLBuffer> buffer : staging) queue->staging.release(buffer);
    staging.clear();
    buffers.clear();
    textures.clear();
    plan.commands.clear();  // free Buffers and pipelines now, not when Metal drops the block
  }
};

GpuFailure failure_kind(NSInteger code) {
  switch (code) {
    case MTLCommandBufferErrorPageFault: return GpuFailure::page_fault;
    case MTLCommandBufferErrorInvalidResource: return GpuFailure::invalid_resource;
    case MTLCommandBufferErrorTimeout: return GpuFailure::timeout;
    case MTLCommandBufferErrorOutOfMemory: return GpuFailure::out_of_memory;
    case MTLCommandBufferErrorNotPermitted: return GpuFailure::not_permitted;
    case MTLCommandBufferErrorDeviceRemoved: return GpuFailure::device_removed;
    default: return GpuFailure::other;
  }
}

// Runs on a Metal thread once the GPU has finished (or failed) a command buffer. Nothing may
// leave it, and the queue must hear of the end whatever happens (finish_submission, P2.1 item 7).
void complete(id<MTLCommandBuffer> done, const std::shared_ptr<Submission>& submission) noexcept {
  struct EndGuard {
    QueueState& queue;
    ~EndGuard() { queue.end(); }
  } guard{*submission->queue};
  finish_submission(
      *submission->completion,
      [&] {
        double seconds = 0;
        with_autorelease_pool([&] {
          if ([done status] == MTLCommandBufferStatusError) {
            NSError* error = [done error];
            throw ExecutionError(gpu_failure_text(submission->plan.commands,
                                                  from_utf8([[error localizedDescription] UTF8String]),
                                                  failure_kind([error code]), "[metal]"));
          }
          seconds = [done GPUEndTime] - [done GPUStartTime];
          submission->copy_back();
        });
        return seconds;
      },
      [&] { submission->release(); });
}

// Issues one Metal call per plan step.
struct Encoder {
  Submission& s;
  const std::string& device_name;
  id<MTLDevice> device;
  id<MTLCommandBuffer> command_buffer;
  id<MTLComputeCommandEncoder> compute = nil;
  id<MTLBlitCommandEncoder> blit = nil;

  void operator()(const CopyIn& c) const {
    std::memcpy(static_cast<char*>([s.buffers[c.buffer] contents]) + c.offset, c.host, c.length);
  }
  void operator()(const BeginCompute&) {
    compute = [command_buffer computeCommandEncoder];
    if (!compute) unable_to_start("compute");
  }
  void operator()(const BeginBlit&) {
    blit = [command_buffer blitCommandEncoder];
    if (!blit) unable_to_start("blit");
  }
  void operator()(const EndPass&) { end(); }
  void operator()(const SetPipeline& p) const {
    const auto* program = dynamic_cast<const MetalProgram*>(p.program);  // the planner checked the device
    [compute setComputePipelineState:(__bridge id<MTLComputePipelineState>)program->pipeline()];
  }
  void operator()(const SetBuffer& b) const { [compute setBuffer:s.buffers[b.buffer] offset:b.offset atIndex:b.index]; }
  void operator()(const SetBytes& b) const {
    [compute setBytes:b.bytes->data() length:b.bytes->size() atIndex:b.index];
  }
  void operator()(const SetThreadgroupMemory& m) const {
    [compute setThreadgroupMemoryLength:m.length atIndex:m.index];
  }
  void operator()(const SetTexture& t) const { [compute setTexture:s.textures[t.texture] atIndex:t.index]; }
  void operator()(const SetSampler& t) const {
    id<MTLSamplerState> state = (__bridge_transfer id<MTLSamplerState>)make_sampler_state((__bridge void*)device,
                                                                                          *t.sampler);
    [compute setSamplerState:state atIndex:t.index];
  }
  void operator()(const DispatchThreads& d) const {
    [compute dispatchThreads:MTLSize{d.threads[0], d.threads[1], d.threads[2]}
        threadsPerThreadgroup:MTLSize{d.group[0], d.group[1], d.group[2]}];
  }
  void operator()(const DispatchThreadgroups& d) const {
    [compute dispatchThreadgroups:MTLSize{d.groups[0], d.groups[1], d.groups[2]}
            threadsPerThreadgroup:MTLSize{d.group[0], d.group[1], d.group[2]}];
  }
  void operator()(const BlitBufferCopy& c) const {
    [blit copyFromBuffer:s.buffers[c.source] sourceOffset:c.source_offset toBuffer:s.buffers[c.destination]
        destinationOffset:c.destination_offset size:c.length];
  }
  void operator()(const BlitToTexture& b) const {
    const ImageCopy& c = b.copy;
    [blit copyFromBuffer:s.buffers[b.buffer] sourceOffset:c.offset sourceBytesPerRow:c.bytes_per_row
        sourceBytesPerImage:c.bytes_per_image sourceSize:MTLSize{c.width, c.height, c.depth}
                  toTexture:s.textures[b.texture] destinationSlice:c.slice destinationLevel:c.level
          destinationOrigin:MTLOrigin{0, 0, 0}];
  }
  void operator()(const BlitToBuffer& b) const {
    const ImageCopy& c = b.copy;
    [blit copyFromTexture:s.textures[b.texture] sourceSlice:c.slice sourceLevel:c.level
                sourceOrigin:MTLOrigin{0, 0, 0} sourceSize:MTLSize{c.width, c.height, c.depth}
                    toBuffer:s.buffers[b.buffer] destinationOffset:c.offset destinationBytesPerRow:c.bytes_per_row
        destinationBytesPerImage:c.bytes_per_image];
  }

  // An encoder must be ended even when its command buffer is dropped.
  void end() {
    if (compute) [compute endEncoding];
    if (blit) [blit endEncoding];
    compute = nil;
    blit = nil;
  }
  [[noreturn]] void unable_to_start(const char* pass) const {
    throw ExecutionError(unable_to_start_text(std::string(pass) + " pass", device_name, "[metal]"));
  }
};

}  // namespace

class MetalQueue::Impl {
 public:
  Impl(id<MTLDevice> device, const DeviceInfo& info)
      : device_(device),
        queue_([device newCommandQueue]),
        info_(info),
        empty_([device newBufferWithLength:kEmptyBufferLength options:MTLResourceStorageModeShared]),
        queue_state_(std::make_shared<QueueState>(device)) {
    if (!queue_ || !empty_)
      throw DeviceError("[metal] unable to create a command queue on " + info_.name +
                        ": the GPU may be busy or was removed; try again, or use mc.Device(\"cpu\")");
  }

  ~Impl() { queue_state_->wait_idle(); }

  void submit(Plan&& plan, const std::shared_ptr<CompletionState>& completion) {
    auto submission = std::make_shared<Submission>();
    submission->plan = std::move(plan);
    submission->completion = completion;
    submission->queue = queue_state_;
    try {
      with_autorelease_pool([&] { encode_and_commit(submission); });
    } catch (...) {
      // Nothing reached the GPU: settle the completion so that no one waits on it forever.
      abandon_submission(*completion, [&] { submission->release(); });
      throw;
    }
  }

  void synchronize() { queue_state_->wait_idle(); }

 private:
  void make_resources(Submission& s) {
    for (const PlanBuffer& b : s.plan.buffers) {
      switch (b.source) {
        case PlanBuffer::Source::storage: {
          const auto* storage = dynamic_cast<const MetalBufferStorage*>(b.storage);  // the planner checked the device
          s.buffers.push_back((__bridge id<MTLBuffer>)storage->buffer());
          break;
        }
        case PlanBuffer::Source::no_copy: {
          // The command buffer keeps it alive; the caller waits before freeing the memory.
          id<MTLBuffer> wrapped = [device_ newBufferWithBytesNoCopy:b.host length:b.length
                                                            options:MTLResourceStorageModeShared
                                                        deallocator:nil];
          if (!wrapped)
            throw Error("[metal] unable to use " + std::to_string(b.length) +
                        " bytes of host memory in place: pass a metalcall Buffer (dev.asarray) instead");
          s.buffers.push_back(wrapped);
          break;
        }
        case PlanBuffer::Source::staging:
          s.buffers.push_back(queue_state_->staging.acquire(b.length));
          s.staging.push_back(s.buffers.back());
          break;
        case PlanBuffer::Source::empty:
          s.buffers.push_back(empty_);
          break;
      }
    }
    for (const PlanTexture& t : s.plan.textures)
      s.textures.push_back((__bridge_transfer id<MTLTexture>)make_texture(
          (__bridge void*)device_, t, (__bridge void*)s.buffers[t.buffer]));
  }

  void encode_and_commit(const std::shared_ptr<Submission>& submission) {
    make_resources(*submission);
    id<MTLCommandBuffer> command_buffer = [queue_ commandBuffer];
    if (!command_buffer) throw ExecutionError(unable_to_start_text("command buffer", info_.name, "[metal]"));
    Encoder encoder{*submission, info_.name, device_, command_buffer};
    try {
      for (const Step& step : submission->plan.steps) std::visit(encoder, step);
    } catch (...) {
      encoder.end();
      throw;
    }
    encoder.end();  // the plan ended its passes; nothing is open here
    [command_buffer addCompletedHandler:^(id<MTLCommandBuffer> done) {
      complete(done, submission);
    }];
    queue_state_->begin();
    [command_buffer commit];
  }

  id<MTLDevice> device_;
  id<MTLCommandQueue> queue_;
  DeviceInfo info_;
  id<MTLBuffer> empty_;  // the plan's empty buffer: bound where Metal needs a buffer and the call has no bytes
  std::shared_ptr<QueueState> queue_state_;  // shared with completion handlers still to run
};

MetalQueue::MetalQueue(void* device, const DeviceInfo& info)
    : impl_(std::make_unique<Impl>((__bridge id<MTLDevice>)device, info)) {}

MetalQueue::~MetalQueue() = default;

void MetalQueue::submit(Plan&& plan, const std::shared_ptr<CompletionState>& completion) {
  impl_->submit(std::move(plan), completion);
}

void MetalQueue::synchronize() { impl_->synchronize(); }

}  // namespace metalcall::metal
