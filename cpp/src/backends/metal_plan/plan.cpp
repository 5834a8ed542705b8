// Plans as text (plan.hpp): one line per step, for tests and messages.
#include "backends/metal_plan/plan.hpp"

#include <string>

namespace metalcall::metal {
namespace {

std::string triple(const std::uint32_t s[3]) {
  return std::to_string(s[0]) + "x" + std::to_string(s[1]) + "x" + std::to_string(s[2]);
}

std::string image(const ImageCopy& c) {
  return "slice " + std::to_string(c.slice) + " level " + std::to_string(c.level) + " offset " +
         std::to_string(c.offset) + " " + std::to_string(c.width) + "x" + std::to_string(c.height) + "x" +
         std::to_string(c.depth);
}

struct Describe {
  std::string operator()(const CopyIn& s) const {
    return "copy_in buffer " + std::to_string(s.buffer) + " offset " + std::to_string(s.offset) + " length " +
           std::to_string(s.length);
  }
  std::string operator()(const BeginCompute&) const { return "begin_compute"; }
  std::string operator()(const BeginBlit&) const { return "begin_blit"; }
  std::string operator()(const EndPass&) const { return "end_pass"; }
  std::string operator()(const SetPipeline& s) const {
    return "set_pipeline " + s.program->info().name + " (call " + std::to_string(s.call) + ")";
  }
  std::string operator()(const SetBuffer& s) const {
    return "set_buffer " + std::to_string(s.buffer) + " offset " + std::to_string(s.offset) + " index " +
           std::to_string(s.index);
  }
  std::string operator()(const SetBytes& s) const {
    return "set_bytes length " + std::to_string(s.bytes->size()) + " index " + std::to_string(s.index);
  }
  std::string operator()(const SetThreadgroupMemory& s) const {
    return "set_threadgroup_memory length " + std::to_string(s.length) + " index " + std::to_string(s.index);
  }
  std::string operator()(const SetTexture& s) const {
    return "set_texture " + std::to_string(s.texture) + " index " + std::to_string(s.index);
  }
  std::string operator()(const SetSampler& s) const { return "set_sampler index " + std::to_string(s.index); }
  std::string operator()(const DispatchThreads& s) const {
    return "dispatch_threads " + triple(s.threads) + " group " + triple(s.group);
  }
  std::string operator()(const DispatchThreadgroups& s) const {
    return "dispatch_threadgroups " + triple(s.groups) + " group " + triple(s.group);
  }
  std::string operator()(const BlitBufferCopy& s) const {
    return "blit_copy buffer " + std::to_string(s.source) + " offset " + std::to_string(s.source_offset) +
           " to buffer " + std::to_string(s.destination) + " offset " + std::to_string(s.destination_offset) +
           " length " + std::to_string(s.length);
  }
  std::string operator()(const BlitToTexture& s) const {
    return "blit_to_texture buffer " + std::to_string(s.buffer) + " to texture " + std::to_string(s.texture) + " " +
           image(s.copy);
  }
  std::string operator()(const BlitToBuffer& s) const {
    return "blit_to_buffer texture " + std::to_string(s.texture) + " to buffer " + std::to_string(s.buffer) + " " +
           image(s.copy);
  }
};

const char* source_name(PlanBuffer::Source source) {
  switch (source) {
    case PlanBuffer::Source::storage: return "storage";
    case PlanBuffer::Source::no_copy: return "no_copy";
    case PlanBuffer::Source::staging: return "staging";
    case PlanBuffer::Source::empty: return "empty";
  }
  return "?";
}

}  // namespace

std::string describe(const Step& step) { return std::visit(Describe{}, step); }

std::string describe(const Plan& plan) {
  std::string out;
  for (std::size_t i = 0; i < plan.buffers.size(); ++i)
    out += "buffer " + std::to_string(i) + " " + source_name(plan.buffers[i].source) + " length " +
           std::to_string(plan.buffers[i].length) + "\n";
  for (std::size_t i = 0; i < plan.textures.size(); ++i)
    out += "texture " + std::to_string(i) +
           (plan.textures[i].source == PlanTexture::Source::staged ? " staged" : " over_buffer") + " buffer " +
           std::to_string(plan.textures[i].buffer) + "\n";
  for (const Step& step : plan.steps) out += describe(step) + "\n";
  for (const CopyBack& c : plan.copy_backs)
    out += "copy_back buffer " + std::to_string(c.buffer) + " offset " + std::to_string(c.offset) + " length " +
           std::to_string(c.length) + "\n";
  return out;
}

}  // namespace metalcall::metal
