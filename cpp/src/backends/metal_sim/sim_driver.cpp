// The Metal simulator's driver (sim_driver.hpp). encode() does what the Objective-C++ driver
// does before a commit (make the plan's buffers, copy host memory in) and checks the plan's
// structure; run() executes the steps on the queue's thread as a GPU would, checking each
// binding and dispatch against the family's limits, and runs each dispatch on the CPU device.
#include "backends/metal_sim/sim_driver.hpp"

#include "backends/metal_sim/sim_command_buffer.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <utility>

#include "metalcall/errors.hpp"

namespace metalcall::metal_sim {

using namespace metal;

// ---- memory ----

SimMemory::SimMemory(std::size_t length, std::size_t page_size) : length_(length) {
  const std::size_t bytes = round_up(std::max<std::size_t>(length, 1), page_size);
  data_ = static_cast<char*>(std::aligned_alloc(page_size, bytes));
  if (!data_) throw DeviceError("[metal-sim] unable to allocate " + std::to_string(length) + " bytes: out of memory");
  std::memset(data_, 0, bytes);
}

SimMemory::~SimMemory() { std::free(data_); }

namespace {
// Metal has no empty buffers: a zero-byte Buffer still owns a small one, and lengths are whole
// 4-byte words (storage_length, as metal_device.mm makes them).
std::unique_ptr<SimMemory> buffer_memory(std::size_t nbytes, std::size_t page_size) {
  return std::make_unique<SimMemory>(storage_length(nbytes), page_size);
}
}  // namespace

SimBufferStorage::SimBufferStorage(std::size_t nbytes, std::size_t page_size, std::uint64_t registry_id)
    : PlanBufferStorage(nullptr, nbytes, registry_id), memory_(buffer_memory(nbytes, page_size)) {
  data_ = memory_->data();
}

SimProgram::SimProgram(std::shared_ptr<Program> cpu, KernelInfo info, std::uint64_t registry_id)
    : PlanProgram(std::move(info), registry_id, 0), cpu_(std::move(cpu)) {
  automatic_threadgroup_limit_ = cpu_->automatic_threadgroup_limit();
}

namespace {
const char* pass_name(int pass) { return pass == 1 ? "compute" : pass == 2 ? "blit" : "no"; }
}  // namespace

// ---- the queue ----

SimQueue::SimQueue(std::shared_ptr<BackendDevice> cpu, const GpuFamily& family, std::uint64_t registry_id,
                   std::string name)
    : cpu_(std::move(cpu)), family_(family), registry_id_(registry_id), name_(std::move(name)) {
  worker_ = std::thread([this] { worker_loop(); });
}

SimQueue::~SimQueue() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return committed_.empty() && !running_; });
    stopping_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void SimQueue::commit(Plan&& plan, const std::shared_ptr<CompletionState>& completion) {
  auto buffer = std::make_unique<SimCommandBuffer>();
  buffer->plan = std::move(plan);
  buffer->completion = completion;
  buffer->fault = fault_from_environment();
  if (buffer->fault.kind == Fault::Kind::merge_passes) merge_compute_passes(buffer->plan);
  encode(*buffer);  // throws before anything is queued
  {
    std::lock_guard<std::mutex> lock(mutex_);
    committed_.push_back(std::move(buffer));
  }
  submission_queued();
  cv_.notify_all();
}

void SimQueue::submission_arrived() {
  if (fault_from_environment().kind == Fault::Kind::slow_submit) hold_first_submission();
}

void SimQueue::synchronize() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return committed_.empty() && !running_; });
}

void SimQueue::worker_loop() {
  for (;;) {
    std::unique_ptr<SimCommandBuffer> buffer;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return stopping_ || !committed_.empty(); });
      if (stopping_ && committed_.empty()) return;
      buffer = std::move(committed_.front());
      committed_.pop_front();
      running_ = true;
    }
    std::exception_ptr error;
    const auto start = std::chrono::steady_clock::now();
    try {
      run(*buffer);
    } catch (...) {
      error = std::current_exception();
    }
    complete(*buffer, error, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    buffer.reset();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      running_ = false;
    }
    cv_.notify_all();
  }
}

// As the Metal driver's completion handler, through the same finish_submission (P2.1 item 7):
// copy-backs only when the GPU succeeded, then the calls' resources go, then the Completion
// finishes, whatever any step throws.
void SimQueue::complete(SimCommandBuffer& buffer, std::exception_ptr error, double seconds) const {
  finish_submission(
      *buffer.completion,
      [&] {
        if (error) std::rethrow_exception(error);
        if (buffer.fault.kind == Fault::Kind::copy_back)
          throw ExecutionError("[metal-sim] fault injected (METALCALL_METAL_SIM_FAULT=copy-back): a copy-back failed");
        for (const CopyBack& c : buffer.plan.copy_backs) {
          if (c.offset + c.length > buffer.length[c.buffer])
            throw ExecutionError(rule("a copy-back reads past the end of buffer " + std::to_string(c.buffer)));
          std::memcpy(c.host, buffer.memory[c.buffer] + c.offset, c.length);
        }
        return seconds;
      },
      [&] {
        for (const std::shared_ptr<SimMemory>& memory : buffer.staging) staging_.give_back(memory, memory->length());
        buffer.staging.clear();
        buffer.plan.commands.clear();  // free buffers and pipelines now
        if (buffer.fault.kind == Fault::Kind::release)
          throw ExecutionError("[metal-sim] fault injected (METALCALL_METAL_SIM_FAULT=release): releasing the "
                               "command buffer's resources failed");
      });
}

// ---- encoding: resources, copy-ins and the plan's structure ----

void SimQueue::encode(SimCommandBuffer& b) const {
  const Plan& plan = b.plan;
  for (std::size_t i = 0; i < plan.buffers.size(); ++i) {
    const PlanBuffer& p = plan.buffers[i];
    const std::string which = "buffer " + std::to_string(i);
    switch (p.source) {
      case PlanBuffer::Source::storage: {
        if (!p.storage || p.storage->registry_id() != registry_id_)
          throw ExecutionError(rule(which + " is a Buffer of another device"));
        b.memory.push_back(static_cast<char*>(p.storage->data()));
        b.length.push_back(storage_length(p.storage->nbytes()));  // as metal_device.mm makes its MTLBuffer
        break;
      }
      case PlanBuffer::Source::no_copy: {
        // newBufferWithBytesNoCopy: a page-aligned pointer and a whole number of pages.
        if (reinterpret_cast<std::uintptr_t>(p.host) % family_.page_size != 0 || p.length == 0 ||
            p.length % family_.page_size != 0)
          throw ExecutionError(rule(which + " wraps host memory without a copy that is not whole pages of " +
                                    std::to_string(family_.page_size) + " bytes"));
        if (p.length > family_.max_buffer_length)
          throw ExecutionError(rule(which + " is longer than maxBufferLength"));
        b.memory.push_back(static_cast<char*>(p.host));
        b.length.push_back(p.length);
        break;
      }
      case PlanBuffer::Source::staging:
      case PlanBuffer::Source::empty: {
        if (p.length == 0) throw ExecutionError(rule(which + ": Metal makes no buffer of 0 bytes"));
        if (p.length > family_.max_buffer_length)
          throw ExecutionError(rule(which + " (" + std::to_string(p.length) + " bytes) is longer than maxBufferLength (" +
                                    std::to_string(family_.max_buffer_length) + ")"));
        if (p.source == PlanBuffer::Source::empty) {
          b.owned.push_back(std::make_unique<SimMemory>(p.length, family_.page_size));
          b.memory.push_back(b.owned.back()->data());
          b.length.push_back(p.length);
          break;
        }
        // As metal_queue.mm: a kept buffer (holding what an earlier submission left) or a new one.
        std::shared_ptr<SimMemory> memory;
        if (auto kept = staging_.take(p.length)) memory = kept->first;
        else memory = std::make_shared<SimMemory>(staging_.allocation_length(p.length), family_.page_size);
        b.staging.push_back(memory);
        b.memory.push_back(memory->data());
        b.length.push_back(memory->length());
        break;
      }
    }
  }
  for (std::size_t i = 0; i < plan.textures.size(); ++i) {
    const PlanTexture& t = plan.textures[i];
    const std::string which = "texture " + std::to_string(i);
    if (t.buffer >= b.memory.size() || !t.texture) throw ExecutionError(rule(which + " names no buffer of the plan"));
    const PlanTextureDescriptor& d = t.descriptor;
    if (d.width * d.height * d.depth * d.array_length == 0 || d.mipmap_levels == 0)
      throw ExecutionError(rule(which + ": a texture descriptor with a size or level count of 0"));
    if (t.source == PlanTexture::Source::over_buffer) {
      // newTextureWithDescriptor:offset:bytesPerRow: makes 2-D textures of one level only (and texture
      // buffers, one row), in the buffer's storage mode (shared here), with rows at multiples of
      // minimumLinearTextureAlignmentForPixelFormat: that hold a row of texels.
      const bool texture_buffer = d.type == PlanTextureDescriptor::Type::texture_buffer && d.height == 1;
      if ((d.type != PlanTextureDescriptor::Type::type2d && !texture_buffer) || d.mipmap_levels != 1 || d.depth32_float ||
          d.depth != 1 || d.array_length != 1)
        throw ExecutionError(rule(which + ": Metal makes only single-level 2-D color textures and texture buffers over a buffer"));
      if (d.private_storage) throw ExecutionError(rule(which + ": a texture over a shared buffer must be shared too"));
      if (t.bytes_per_row % family_.linear_texture_alignment != 0 ||
          t.bytes_per_row < std::size_t(d.width) * d.format.bytes_per_pixel())
        throw ExecutionError(rule(which + ": rows " + std::to_string(t.bytes_per_row) +
                                  " bytes apart, not a multiple of the linear texture alignment " +
                                  std::to_string(family_.linear_texture_alignment) + " holding a row"));
      b.texture_memory.push_back(nullptr);
    } else {
      // Filled and emptied by blits only: private storage, which the host never maps.
      if (!d.private_storage) throw ExecutionError(rule(which + ": a staged texture is private storage"));
      b.owned.push_back(std::make_unique<SimMemory>(b.length[t.buffer], family_.page_size));  // private storage
      b.texture_memory.push_back(b.owned.back()->data());
    }
  }
  int pass = 0;  // 0 none, 1 compute, 2 blit
  for (const Step& step : plan.steps) {
    const bool compute_step = std::holds_alternative<SetPipeline>(step) || std::holds_alternative<SetBuffer>(step) ||
                              std::holds_alternative<SetBytes>(step) ||
                              std::holds_alternative<SetThreadgroupMemory>(step) ||
                              std::holds_alternative<SetTexture>(step) || std::holds_alternative<SetSampler>(step) ||
                              std::holds_alternative<DispatchThreads>(step) ||
                              std::holds_alternative<DispatchThreadgroups>(step);
    const bool blit_step = std::holds_alternative<BlitBufferCopy>(step) || std::holds_alternative<BlitToTexture>(step) ||
                           std::holds_alternative<BlitToBuffer>(step);
    if (compute_step && pass != 1)
      throw ExecutionError(rule("'" + describe(step) + "' outside a compute pass (in " + pass_name(pass) + " pass)"));
    if (blit_step && pass != 2)
      throw ExecutionError(rule("'" + describe(step) + "' outside a blit pass (in " + pass_name(pass) + " pass)"));
    if (std::holds_alternative<BeginCompute>(step) || std::holds_alternative<BeginBlit>(step)) {
      if (pass != 0) throw ExecutionError(rule("a pass begins while the " + std::string(pass_name(pass)) + " pass is open"));
      pass = std::holds_alternative<BeginCompute>(step) ? 1 : 2;
    } else if (std::holds_alternative<EndPass>(step)) {
      if (pass == 0) throw ExecutionError(rule("end_pass without an open pass"));
      pass = 0;
    } else if (const auto* s = std::get_if<CopyIn>(&step)) {
      // A host write into a shared buffer before the commit: the GPU sees it.
      if (s->buffer >= b.memory.size() || s->offset + s->length > b.length[s->buffer])
        throw ExecutionError(rule("'" + describe(step) + "' writes past the end of the buffer"));
      std::memcpy(b.memory[s->buffer] + s->offset, s->host, s->length);
    } else if (const auto* s = std::get_if<SetBytes>(&step)) {
      if (s->bytes->empty() || s->bytes->size() > kMaxInlineBytes)
        throw ExecutionError(rule("setBytes of " + std::to_string(s->bytes->size()) + " bytes: Metal takes 1 to " +
                                  std::to_string(kMaxInlineBytes)));
    } else if (const auto* s = std::get_if<SetThreadgroupMemory>(&step)) {
      if (s->length == 0 || s->length % kThreadgroupMemoryGranule != 0 || s->length > family_.threadgroup_memory_length)
        throw ExecutionError(rule("setThreadgroupMemoryLength " + std::to_string(s->length) +
                                  ": a multiple of 16 bytes, at most " +
                                  std::to_string(family_.threadgroup_memory_length)));
    } else if (const auto* s = std::get_if<SetBuffer>(&step)) {
      if (s->buffer >= b.memory.size() || s->offset >= b.length[s->buffer])
        throw ExecutionError(rule("'" + describe(step) + "': the offset must be inside the buffer"));
    } else if (const auto* s = std::get_if<BlitBufferCopy>(&step)) {
      if (s->source >= b.memory.size() || s->destination >= b.memory.size() ||
          s->source_offset + s->length > b.length[s->source] ||
          s->destination_offset + s->length > b.length[s->destination])
        throw ExecutionError(rule("'" + describe(step) + "' copies past the end of a buffer"));
      // copyFromBuffer:sourceOffset:toBuffer:destinationOffset:size: "In macOS, sourceOffset [and
      // destinationOffset] needs to be a multiple of 4" (size too), any value in iOS.
      if (family_.macos && (s->source_offset % kBufferCopyGranule != 0 ||
                            s->destination_offset % kBufferCopyGranule != 0 || s->length % kBufferCopyGranule != 0))
        throw ExecutionError(rule("'" + describe(step) + "': in macOS a buffer blit's offsets and size are multiples "
                                  "of 4 bytes"));
    } else if (const auto* s = std::get_if<SetPipeline>(&step)) {
      const auto* program = dynamic_cast<const SimProgram*>(s->program);
      if (!program || program->registry_id() != registry_id_)
        throw ExecutionError(rule("a pipeline of another device"));
    } else if (std::holds_alternative<DispatchThreads>(step) && !family_.nonuniform_threadgroups) {
      throw ExecutionError(rule("dispatchThreads: on " + family_.name +
                                ", which has no non-uniform threadgroups (dispatchThreadgroups only)"));
    }
  }
  if (pass != 0) throw ExecutionError(rule("the command buffer is committed with a pass still open"));
}

// ---- running: the GPU's side ----

namespace {
std::uint32_t checked_product(std::uint32_t a, std::uint32_t b) {
  const std::uint64_t p = std::uint64_t(a) * b;
  if (p > 0xffffffffull) throw ExecutionError(rule("a dispatch of more than 2^32 threads in one dimension"));
  return static_cast<std::uint32_t>(p);
}
}  // namespace

void SimQueue::run(SimCommandBuffer& b) const {
  if (b.fault.kind == Fault::Kind::gpu)  // the command buffer fails before it runs, as a lost GPU's would
    throw ExecutionError(gpu_failure_text(b.plan.commands, "the GPU failed (fault injected by METALCALL_METAL_SIM_FAULT)",
                                          b.fault.gpu, "[metal-sim]"));
  Encoder encoder;
  const std::vector<Step>& steps = b.plan.steps;
  for (std::size_t at = 0; at < steps.size(); ++at) {
    const Step& step = steps[at];
    if (std::holds_alternative<BeginCompute>(step)) {
      encoder = Encoder{};  // a new encoder starts with empty argument tables
      // The buffers the pass reads through textures, as they are now (see Encoder::snapshots).
      for (std::size_t next = at + 1; next < steps.size() && !std::holds_alternative<EndPass>(steps[next]); ++next) {
        const auto* t = std::get_if<SetTexture>(&steps[next]);
        if (!t || b.plan.textures[t->texture].source != PlanTexture::Source::over_buffer) continue;
        const std::size_t buffer = b.plan.textures[t->texture].buffer;
        if (encoder.snapshots.count(buffer)) continue;
        auto copy = std::make_unique<SimMemory>(b.length[buffer], family_.page_size);
        std::memcpy(copy->data(), b.memory[buffer], b.length[buffer]);
        encoder.snapshots.emplace(buffer, std::move(copy));
      }
    } else if (std::holds_alternative<EndPass>(step)) {
      for (const auto& [buffer, written] : encoder.snapshot_written)
        if (written) std::memcpy(b.memory[buffer], encoder.snapshots[buffer]->data(), b.length[buffer]);
      encoder = Encoder{};
    } else if (const auto* s = std::get_if<SetTexture>(&step)) {
      encoder.textures[s->index] = s->texture;
    } else if (const auto* s = std::get_if<SetSampler>(&step)) {
      encoder.samplers[s->index] = s->sampler;
    } else if (const auto* s = std::get_if<BlitToTexture>(&step)) {
      blit_image(b, s->buffer, s->texture, s->copy, true);
    } else if (const auto* s = std::get_if<BlitToBuffer>(&step)) {
      blit_image(b, s->buffer, s->texture, s->copy, false);
    } else if (const auto* s = std::get_if<SetPipeline>(&step)) {
      encoder.program = static_cast<const SimProgram*>(s->program);
      encoder.call = s->call;
    } else if (const auto* s = std::get_if<SetBuffer>(&step)) {
      encoder.buffers[s->index] = BoundBuffer{false, s->buffer, s->offset, {}};
    } else if (const auto* s = std::get_if<SetBytes>(&step)) {
      encoder.buffers[s->index] = BoundBuffer{true, 0, 0, *s->bytes};
    } else if (const auto* s = std::get_if<SetThreadgroupMemory>(&step)) {
      encoder.threadgroup_memory[s->index] = s->length;
    } else if (const auto* s = std::get_if<BlitBufferCopy>(&step)) {
      std::memmove(b.memory[s->destination] + s->destination_offset, b.memory[s->source] + s->source_offset, s->length);
    } else if (const auto* s = std::get_if<DispatchThreads>(&step)) {
      dispatch(*cpu_, family_, b, encoder, s->threads, s->group);
    } else if (const auto* s = std::get_if<DispatchThreadgroups>(&step)) {
      std::uint32_t threads[3];
      for (int i = 0; i < 3; ++i) threads[i] = checked_product(s->groups[i], s->group[i]);
      dispatch(*cpu_, family_, b, encoder, threads, s->group);
    }
  }
}

}  // namespace metalcall::metal_sim
