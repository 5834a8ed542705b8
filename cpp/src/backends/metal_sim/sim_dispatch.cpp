// One dispatch on the Metal simulator (sim_command_buffer.hpp): the pipeline's arguments from the
// encoder's tables, checked against Metal's rules, handed to the CPU backend as one call. Textures
// reach the kernel as the descriptors core wrote for the call, pointed at the memory the plan made
// for them: a staged texture's private copy, or, over a buffer, the buffer as the pass began.
#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "backends/metal_sim/sim_command_buffer.hpp"
#include "metalcall/errors.hpp"

namespace metalcall::metal_sim {

using namespace metal;

namespace {

// A pointer or a `device T&` the kernel may write (core binds a writable reference in place, as a pointer).
bool writes_buffer(const ParamInfo& param) {
  return (param.kind == ParamKind::buffer || param.kind == ParamKind::reference) && !param.is_const &&
         param.address_space != AddressSpace::constant;
}

bool writes_texture(const ParamInfo& param) {
  return param.texture_access == TextureAccess::write || param.texture_access == TextureAccess::read_write;
}

// Apple: within a compute pass, a buffer's texture view and its buffer view are not coherent.
void record_use(Encoder& encoder, std::size_t buffer, bool via_texture, bool writes, const std::string& where) {
  BufferUse& use = encoder.uses[buffer];
  (via_texture ? (writes ? use.texture_write : use.texture_read) : (writes ? use.buffer_write : use.buffer_read)) = true;
  const bool both = (use.buffer_read || use.buffer_write) && (use.texture_read || use.texture_write);
  if (both && (use.buffer_write || use.texture_write))
    throw ExecutionError(rule(where + "buffer " + std::to_string(buffer) +
                              " is used through a texture and through a buffer binding in one compute pass, and one "
                              "of them writes it: Metal keeps the two views coherent only across passes"));
}

BoundArgument buffer_argument(SimCommandBuffer& b, Encoder& encoder, const ParamInfo& param, const std::string& where) {
  BoundArgument arg;
  arg.kind = param.kind;
  auto found = encoder.buffers.find(static_cast<std::uint32_t>(param.binding));
  if (found == encoder.buffers.end())
    throw ExecutionError(rule(where + "nothing bound at buffer(" + std::to_string(param.binding) + ") '" + param.name +
                              "'"));
  const BoundBuffer& bound = found->second;
  if (bound.bytes) {
    arg.bytes = bound.data;
    return arg;
  }
  // setBuffer:offset: on macOS: constant-space offsets at multiples of 256 bytes, device-space
  // ones at multiples of the data type's alignment.
  const std::size_t alignment = param.address_space == AddressSpace::constant ? kConstantOffsetAlignment
                                                                              : std::max<std::size_t>(param.element_align, 1);
  if (bound.offset % alignment != 0)
    throw ExecutionError(rule(where + "buffer(" + std::to_string(param.binding) + ") '" + param.name +
                              "' bound at offset " + std::to_string(bound.offset) + ", not a multiple of " +
                              std::to_string(alignment)));
  record_use(encoder, bound.buffer, false, writes_buffer(param), where);
  arg.buffer = std::make_shared<MemoryView>(b.memory[bound.buffer] + bound.offset, b.length[bound.buffer] - bound.offset);
  return arg;
}

// The texels the kernel sees for texture(index), the call's `storage`: the staged texture's memory
// or the pass's snapshot of the buffer under it.
char* texture_memory(SimCommandBuffer& b, Encoder& encoder, const ParamInfo& param, std::uint32_t index,
                     const std::shared_ptr<BufferStorage>& storage, const std::string& where, std::size_t& bytes) {
  auto found = encoder.textures.find(index);
  if (found == encoder.textures.end())
    throw ExecutionError(rule(where + "nothing bound at texture(" + std::to_string(index) + ")"));
  const PlanTexture& planned = b.plan.textures[found->second];
  if (planned.texture->storage().storage() != storage)
    throw ExecutionError(rule(where + "texture(" + std::to_string(index) + ") is not the call's texture"));
  bytes = b.length[planned.buffer];
  if (writes_texture(param) && !planned.descriptor.shader_write)
    throw ExecutionError(rule(where + "texture(" + std::to_string(index) +
                              ") is written by the kernel but was made without MTLTextureUsageShaderWrite"));
  if (param.texture_access != TextureAccess::write && !planned.descriptor.shader_read)
    throw ExecutionError(rule(where + "texture(" + std::to_string(index) +
                              ") is read by the kernel but was made without MTLTextureUsageShaderRead"));
  if (planned.source == PlanTexture::Source::staged) return b.texture_memory[found->second];
  auto snapshot = encoder.snapshots.find(planned.buffer);
  if (snapshot == encoder.snapshots.end())
    throw ExecutionError(rule(where + "a texture over a buffer bound outside the pass that began with it"));
  record_use(encoder, planned.buffer, true, writes_texture(param), where);
  if (writes_texture(param)) encoder.snapshot_written[planned.buffer] = true;
  return snapshot->second->data();
}

// The call's descriptors (core/texture.cpp; N in a row for an array of textures), each texel
// pointer moved to the memory the kernel sees.
BoundArgument texture_argument(SimCommandBuffer& b, Encoder& encoder, const ParamInfo& param,
                               const BoundArgument& in_call, const std::string& where) {
  BoundArgument arg = in_call;
  const auto first = static_cast<std::uint32_t>(param.binding);
  const std::size_t abi = in_call.bytes.size() / (1 + in_call.more_textures.size());
  for (std::size_t k = 0; k <= in_call.more_textures.size(); ++k) {
    std::size_t bytes = 0;
    const auto& storage = k == 0 ? in_call.buffer : in_call.more_buffers[k - 1];
    void* data = texture_memory(b, encoder, param, first + static_cast<std::uint32_t>(k), storage, where, bytes);
    std::memcpy(arg.bytes.data() + k * abi, &data, sizeof data);
    auto view = std::make_shared<MemoryView>(static_cast<char*>(data), bytes);
    if (k == 0) arg.buffer = std::move(view);
    else arg.more_buffers[k - 1] = std::move(view);
  }
  return arg;
}

}  // namespace

void dispatch(BackendDevice& cpu, const GpuFamily& family, SimCommandBuffer& b, Encoder& encoder,
              const std::uint32_t threads[3], const std::uint32_t group[3]) {
  if (!encoder.program) throw ExecutionError(rule("a dispatch without a pipeline"));
  const SimProgram& program = *encoder.program;
  const KernelInfo& kernel = program.info();
  const std::string where = "kernel '" + kernel.name + "': ";
  std::uint64_t group_threads = 1;
  for (int i = 0; i < 3; ++i) {
    if (group[i] == 0 || group[i] > family.max_threads_per_threadgroup)
      throw ExecutionError(rule(where + "threadsPerThreadgroup must be 1 to " +
                                std::to_string(family.max_threads_per_threadgroup) + " in each dimension"));
    group_threads *= group[i];
  }
  if (group_threads > kernel.max_total_threads_per_threadgroup)
    throw ExecutionError(rule(where + std::to_string(group_threads) + " threads per threadgroup, over the pipeline's "
                              "maxTotalThreadsPerThreadgroup " + std::to_string(kernel.max_total_threads_per_threadgroup)));
  const DispatchCommand& call = b.plan.commands[encoder.call];
  DispatchCommand command;
  command.program = program.cpu();
  command.simd_width = kernel.thread_execution_width;  // the pipeline's SIMD-groups, not the CPU's 32
  // The kernel's own threadgroup variables count against the family's limit too (the translated
  // code checks them as it runs: metal_sync.h); the driver knows only the call's lengths.
  command.threadgroup_memory_limit = family.threadgroup_memory_length;
  // Undefined at each group's start on Metal: 0xFF bytes until the group writes it (metal_poison.h).
  command.poison_threadgroup = true;
  for (int i = 0; i < 3; ++i) command.grid[i] = threads[i], command.threadgroup[i] = group[i];
  std::size_t threadgroup_bytes = program.static_threadgroup_memory();
  TextureType sampled = TextureType::none;  // the first sampled texture Metal's unnormalised-coordinate rule refuses
  for (const ParamInfo& param : kernel.params) {
    const auto position = static_cast<std::size_t>(param.position);
    if (position >= call.args.size()) throw ExecutionError(rule(where + "the call has fewer arguments than the pipeline"));
    const BoundArgument& in_call = call.args[position];
    BoundArgument arg;
    arg.kind = param.kind;
    if (!param.enabled || in_call.absent) {
      arg = in_call;  // not in the pipeline: translated kernels see zeros / null
    } else if (param.kind == ParamKind::threadgroup_memory) {
      auto found = encoder.threadgroup_memory.find(static_cast<std::uint32_t>(param.binding));
      if (found == encoder.threadgroup_memory.end())
        throw ExecutionError(rule(where + "nothing bound at threadgroup(" + std::to_string(param.binding) + ")"));
      arg.threadgroup_length = found->second;
      threadgroup_bytes += found->second;
    } else if (param.kind == ParamKind::buffer || param.kind == ParamKind::reference || param.kind == ParamKind::value) {
      arg = buffer_argument(b, encoder, param, where);
    } else if (param.kind == ParamKind::texture) {
      arg = texture_argument(b, encoder, param, in_call, where);
      const TextureType type = in_call.texture.descriptor().type;
      if (param.texture_access == TextureAccess::sample && type != TextureType::texture1d &&
          type != TextureType::texture2d && type != TextureType::depth2d)
        sampled = type;
    } else if (param.kind == ParamKind::sampler) {
      if (encoder.samplers.find(static_cast<std::uint32_t>(param.binding)) == encoder.samplers.end())
        throw ExecutionError(rule(where + "nothing bound at sampler(" + std::to_string(param.binding) + ")"));
      arg = in_call;  // the sampler state's values, as core wrote them for the call
    }
    command.args.push_back(std::move(arg));
  }
  for (const auto& [index, sampler] : encoder.samplers) {
    try {
      check_metal_sampler(*sampler, sampled, where + "sampler(" + std::to_string(index) + ")");
    } catch (const ArgumentError& e) {
      throw ExecutionError(rule(e.what()));
    }
  }
  if (threadgroup_bytes > family.threadgroup_memory_length)
    throw ExecutionError(rule(where + std::to_string(threadgroup_bytes) + " bytes of threadgroup memory, over " +
                              std::to_string(family.threadgroup_memory_length)));
  auto done = std::make_shared<CompletionState>();
  std::vector<DispatchCommand> commands;
  commands.push_back(std::move(command));
  cpu.submit(std::move(commands), done, /*caller_waits=*/true);
  done->wait(/*interruptible=*/false);
}

void blit_image(SimCommandBuffer& b, std::size_t buffer, std::size_t texture, const ImageCopy& copy, bool to_texture) {
  const PlanTexture& planned = b.plan.textures[texture];
  char* texels = b.texture_memory[texture];
  if (!texels) throw ExecutionError(rule("a blit to or from a texture made over a buffer"));
  const std::size_t row = copy.width * planned.texture->descriptor().format.bytes_per_pixel();
  const std::size_t image = copy.bytes_per_image ? copy.bytes_per_image : copy.bytes_per_row * copy.height;
  const std::size_t end = copy.offset + (copy.depth - 1) * image + (copy.height - 1) * copy.bytes_per_row + row;
  if (end > b.length[buffer] || end > b.length[planned.buffer] || copy.bytes_per_row < row)
    throw ExecutionError(rule("a blit of " + std::to_string(copy.width) + "x" + std::to_string(copy.height) + "x" +
                              std::to_string(copy.depth) + " texels past the end of buffer " + std::to_string(buffer)));
  for (std::uint32_t z = 0; z < copy.depth; ++z)
    for (std::uint32_t y = 0; y < copy.height; ++y) {
      const std::size_t at = copy.offset + z * image + y * copy.bytes_per_row;
      if (to_texture) std::memcpy(texels + at, b.memory[buffer] + at, row);
      else std::memcpy(b.memory[buffer] + at, texels + at, row);
    }
}

}  // namespace metalcall::metal_sim
