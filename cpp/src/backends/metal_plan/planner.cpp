// The planner (planner.hpp): host memory first (one buffer per range, shared by the calls),
// then each call's passes, bindings and dispatch, in call order.
#include "backends/metal_plan/planner.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include "metalcall/errors.hpp"

namespace metalcall::metal {
namespace {

constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

std::string shape(const std::uint32_t s[3]) {
  return "(" + std::to_string(s[0]) + ", " + std::to_string(s[1]) + ", " + std::to_string(s[2]) + ")";
}

std::string argument_name(const KernelInfo& kernel, const ParamInfo& param) {
  return "kernel '" + kernel.name + "' argument " + std::to_string(param.binding) + " '" + param.name + "'";
}

/** Host memory one call binds. */
struct HostRange {
  char* start;
  std::size_t length;
};

/** Overlapping host ranges of the submission, one buffer for all. */
struct HostUnion {
  char* start;
  std::size_t length;
  std::size_t buffer = kNone;  // in Plan::buffers
  std::size_t lead = 0;        // bytes before the host memory's first byte in that buffer
};

/** How one argument of a call reaches the kernel through a buffer. */
struct BufferBinding {
  std::size_t buffer;
  std::size_t offset;
  std::uint32_t index;
  bool writes;
  bool via_texture;
};

class Planner {
 public:
  Planner(std::vector<DispatchCommand>&& commands, const PlanTarget& target) : target_(target) {
    plan_.commands = std::move(commands);
  }

  Plan run() {
    for (const DispatchCommand& command : plan_.commands) check_call(command);
    plan_host_memory();
    for (std::size_t call = 0; call < plan_.commands.size(); ++call) plan_call(call);
    end_pass();
    return std::move(plan_);
  }

 private:
  enum class Pass { none, compute, blit };

  // ---- checks that need nothing planned yet ----

  const PlanProgram& program_of(const DispatchCommand& command) const {
    const auto* program = dynamic_cast<const PlanProgram*>(command.program.get());
    if (!program || program->registry_id() != target_.registry_id)
      throw ArgumentError("kernel '" + command.program->info().name + "' was built for another device: compile it on " +
                          target_.name);
    return *program;
  }

  void check_call(const DispatchCommand& command) const {
    const KernelInfo& kernel = program_of(command).info();
    if (command.args.size() != kernel.params.size())
      throw ArgumentError("kernel '" + kernel.name + "' has " + std::to_string(kernel.params.size()) +
                          " parameters but the call bound " + std::to_string(command.args.size()));
    for (std::size_t i = 0; i < command.args.size(); ++i) {
      const BoundArgument& arg = command.args[i];
      if (arg.absent || !arg.host_data || arg.host_nbytes == 0) continue;
      // Before anything is staged: a staging buffer this large cannot exist (P2.1 item 8).
      if (arg.host_nbytes > target_.max_buffer_length)
        throw ArgumentError(argument_name(kernel, kernel.params[i]) + " is " + std::to_string(arg.host_nbytes) +
                            " bytes of host memory, more than the largest buffer " + target_.name + " allows (" +
                            std::to_string(target_.max_buffer_length) + " bytes): split it over several calls");
    }
  }

  // ---- host memory: one buffer per range, for the whole submission ----

  void plan_host_memory() {
    std::vector<HostRange> ranges;
    for (const DispatchCommand& command : plan_.commands)
      for (const BoundArgument& arg : command.args)
        if (!arg.absent && arg.host_data && arg.host_nbytes > 0)
          ranges.push_back({static_cast<char*>(arg.host_data), arg.host_nbytes});
    std::sort(ranges.begin(), ranges.end(), [](const HostRange& a, const HostRange& b) { return a.start < b.start; });
    for (const HostRange& r : ranges) {
      if (!unions_.empty() && r.start < unions_.back().start + unions_.back().length) {
        HostUnion& u = unions_.back();  // overlaps the last one: one memory, one buffer
        u.length = std::max(u.length, static_cast<std::size_t>(r.start + r.length - u.start));
      } else {
        unions_.push_back({r.start, r.length});
      }
    }
    for (HostUnion& u : unions_) place(u);
  }

  void place(HostUnion& u) {
    const bool aligned = reinterpret_cast<std::uintptr_t>(u.start) % target_.page_size == 0;
    const std::size_t backing =
        aligned && u.length % target_.page_size != 0 && target_.allocation_size ? target_.allocation_size(u.start) : 0;
    const std::size_t wrapped = no_copy_length(u.start, u.length, target_.page_size, backing);
    if (wrapped && wrapped <= target_.max_buffer_length) {
      u.buffer = add_buffer({PlanBuffer::Source::no_copy, nullptr, u.start, wrapped});
      return;
    }
    // Staged so that each byte keeps its address modulo 256: bindings keep the alignment they
    // have in host memory, up to the 256 bytes Metal asks of constant-space offsets.
    u.lead = reinterpret_cast<std::uintptr_t>(u.start) % kConstantOffsetAlignment;
    if (u.lead + u.length > target_.max_buffer_length) u.lead = 0;
    if (u.length > target_.max_buffer_length)
      throw ArgumentError("[metal] calls of one submission bind overlapping host memory of " +
                          std::to_string(u.length) + " bytes in all, more than the largest buffer " + target_.name +
                          " allows (" + std::to_string(target_.max_buffer_length) +
                          " bytes): split the work over several submissions");
    u.buffer = add_buffer({PlanBuffer::Source::staging, nullptr, nullptr, storage_length(u.lead + u.length)});
    plan_.steps.push_back(CopyIn{u.buffer, u.lead, u.start, u.length});
  }

  const HostUnion& union_of(const void* host) const {
    const char* p = static_cast<const char*>(host);
    for (const HostUnion& u : unions_)
      if (p >= u.start && p < u.start + u.length) return u;
    throw ArgumentError("[metal] internal error: host memory the planner did not place; please report it");
  }

  void copy_back(const HostUnion& u, void* host, std::size_t length) {
    if (plan_.buffers[u.buffer].source == PlanBuffer::Source::no_copy) return;  // used in place
    const std::size_t offset = u.lead + static_cast<std::size_t>(static_cast<char*>(host) - u.start);
    for (const CopyBack& c : plan_.copy_backs)
      if (c.buffer == u.buffer && c.offset == offset && c.length == length) return;
    plan_.copy_backs.push_back({u.buffer, offset, host, length});
  }

  // ---- buffers ----

  std::size_t add_buffer(PlanBuffer buffer) {
    plan_.buffers.push_back(buffer);
    return plan_.buffers.size() - 1;
  }

  std::size_t storage_buffer(const std::shared_ptr<BufferStorage>& storage, const KernelInfo& kernel,
                             const ParamInfo& param, const char* what) {
    const auto* own = dynamic_cast<const PlanBufferStorage*>(storage.get());
    if (!own || own->registry_id() != target_.registry_id)
      throw ArgumentError("kernel '" + kernel.name + "' " + what + " " + std::to_string(param.binding) + " '" +
                          param.name + "' is memory of another device: make it on " + target_.name);
    auto found = storages_.find(own);
    if (found != storages_.end()) return found->second;
    const std::size_t index = add_buffer({PlanBuffer::Source::storage, own, nullptr, storage_length(own->nbytes())});
    storages_.emplace(own, index);
    return index;
  }

  std::size_t empty_buffer() {
    if (empty_ == kNone) empty_ = add_buffer({PlanBuffer::Source::empty, nullptr, nullptr, kEmptyBufferLength});
    return empty_;
  }

  // ---- passes ----

  void begin(Pass pass) {
    if (pass_ == pass) return;
    end_pass();
    plan_.steps.push_back(pass == Pass::compute ? Step{BeginCompute{}} : Step{BeginBlit{}});
    pass_ = pass;
  }

  void end_pass() {
    if (pass_ == Pass::none) return;
    plan_.steps.push_back(EndPass{});
    pass_ = Pass::none;
    pass_accesses_.clear();
  }

  // Metal keeps a buffer's texture view and buffer view coherent only across passes (P2.1 item 3).
  bool conflicts_with_pass(const std::vector<BufferBinding>& bindings) const {
    for (const BufferBinding& now : bindings)
      for (const BufferBinding& before : pass_accesses_)
        if (now.buffer == before.buffer && now.via_texture != before.via_texture && (now.writes || before.writes))
          return true;
    return false;
  }

  // ---- one call ----

  struct CallPlan {
    const KernelInfo* kernel = nullptr;  // for messages
    std::vector<Step> before;        // blits before the call's pass
    std::vector<Step> bindings;      // set_* steps, in parameter order
    std::vector<Step> after;         // blits after it
    std::vector<BufferBinding> accesses;
  };

  void plan_call(std::size_t call) {
    const DispatchCommand& command = plan_.commands[call];
    const PlanProgram& program = program_of(command);
    const KernelInfo& kernel = program.info();
    CallPlan p;
    p.kernel = &kernel;
    call_staged_.clear();
    std::size_t threadgroup_bytes = program.static_threadgroup_memory();
    for (std::size_t i = 0; i < command.args.size(); ++i) {
      const BoundArgument& arg = command.args[i];
      const ParamInfo& param = kernel.params[i];
      if (arg.absent) continue;  // a false [[function_constant]]: not in the pipeline, nothing to bind
      const auto index = static_cast<std::uint32_t>(param.binding);
      switch (arg.kind) {
        case ParamKind::builtin:
          break;
        case ParamKind::threadgroup_memory:
          // Core has checked the length: non-zero and a multiple of 16 bytes, as Metal requires.
          threadgroup_bytes += arg.threadgroup_length;
          p.bindings.push_back(SetThreadgroupMemory{arg.threadgroup_length, index});
          break;
        case ParamKind::buffer:
        case ParamKind::reference:
        case ParamKind::value:
          bind_buffer(arg, param, kernel, index, p);
          break;
        case ParamKind::texture:
          // An array of N textures: N bindings from its index on, as Metal binds them.
          bind_texture(arg.texture, arg.buffer, param, kernel, index, p);
          for (std::size_t k = 0; k < arg.more_textures.size(); ++k)
            bind_texture(arg.more_textures[k], arg.more_buffers[k], param, kernel, index + 1 + static_cast<std::uint32_t>(k), p);
          break;
        case ParamKind::sampler:
          check_metal_sampler(arg.sampler, sampled_type(command, kernel),
                              "kernel '" + kernel.name + "' sampler(" + std::to_string(param.binding) + ") '" +
                                  param.name + "'");
          p.bindings.push_back(SetSampler{&arg.sampler, index});
          break;
      }
    }
    if (threadgroup_bytes > target_.threadgroup_memory_length)
      throw ArgumentError("kernel '" + kernel.name + "' needs " + std::to_string(threadgroup_bytes) +
                          " bytes of threadgroup memory (" + std::to_string(program.static_threadgroup_memory()) +
                          " declared in the kernel, the rest from threadgroup_memory=) but " + target_.name + " has " +
                          std::to_string(target_.threadgroup_memory_length) + ": use less");
    const Step dispatch = dispatch_step(command, kernel);

    if (!p.before.empty()) {
      begin(Pass::blit);
      plan_.steps.insert(plan_.steps.end(), p.before.begin(), p.before.end());
    }
    if (pass_ == Pass::compute && conflicts_with_pass(p.accesses)) end_pass();
    begin(Pass::compute);
    plan_.steps.push_back(SetPipeline{&program, call});
    plan_.steps.insert(plan_.steps.end(), p.bindings.begin(), p.bindings.end());
    plan_.steps.push_back(dispatch);
    pass_accesses_.insert(pass_accesses_.end(), p.accesses.begin(), p.accesses.end());
    if (!p.after.empty()) {
      begin(Pass::blit);
      plan_.steps.insert(plan_.steps.end(), p.after.begin(), p.after.end());
    }
    for (const BoundArgument& arg : command.args)
      if (!arg.absent && arg.written && arg.host_data && arg.host_nbytes > 0 && !arg.buffer)
        written_host_.push_back({static_cast<char*>(arg.host_data), arg.host_nbytes});
  }

  static const KernelInfo& kernel_of(const CallPlan& p) { return *p.kernel; }

  void bind_buffer(const BoundArgument& arg, const ParamInfo& param, const KernelInfo& kernel, std::uint32_t index,
                   CallPlan& p) {
    const bool writes = arg.written;
    if (arg.buffer) {
      // A Buffer, or a view of one (host memory inside it) from its offset.
      const std::size_t buffer = storage_buffer(arg.buffer, kernel, param, "argument");
      bind_at(buffer, arg.offset, arg.memory_nbytes(), writes, param, index, p);
    } else if (arg.host_data && arg.host_nbytes > 0) {
      bind_host_memory(arg, param, index, p);
    } else if (!arg.bytes.empty()) {
      if (arg.bytes.size() <= kMaxInlineBytes) {
        p.bindings.push_back(SetBytes{&arg.bytes, index});
      } else {
        const std::size_t buffer = add_buffer({PlanBuffer::Source::staging, nullptr, nullptr, arg.bytes.size()});
        plan_.steps.insert(plan_.steps.begin(), CopyIn{buffer, 0, arg.bytes.data(), arg.bytes.size()});
        p.bindings.push_back(SetBuffer{buffer, 0, index});
      }
    } else {
      // Zero-length host memory: the kernel cannot read it, but Metal wants a buffer bound.
      p.bindings.push_back(SetBuffer{empty_buffer(), 0, index});
    }
  }

  void bind_host_memory(const BoundArgument& arg, const ParamInfo& param, std::uint32_t index, CallPlan& p) {
    const HostUnion& u = union_of(arg.host_data);
    const std::size_t offset = u.lead + static_cast<std::size_t>(static_cast<char*>(arg.host_data) - u.start);
    if (arg.written) copy_back(u, arg.host_data, arg.host_nbytes);
    if (offset % binding_alignment(param) != 0 && offset % kBufferCopyGranule != 0 && !arg.written) {
      // A blit cannot move bytes by 1 to 3 on macOS: the host copies them to an aligned staging
      // buffer before the commit instead, which is what the kernel would read unless an earlier
      // call of this submission writes them on the GPU (then nothing Metal offers realigns them).
      if (written_before(arg.host_data, arg.host_nbytes))
        throw ArgumentError(argument_name(kernel_of(p), param) + " is host memory at an address " +
                            std::to_string(reinterpret_cast<std::uintptr_t>(arg.host_data) % kBufferCopyGranule) +
                            " bytes past a multiple of 4, which an earlier call of this batch writes: Metal cannot "
                            "realign it on the GPU (buffer blits move whole 4-byte words on macOS); pass a copy at an "
                            "aligned address, or run the calls in separate batches");
      const std::size_t own = add_buffer({PlanBuffer::Source::staging, nullptr, nullptr, storage_length(arg.host_nbytes)});
      plan_.steps.insert(plan_.steps.begin(), CopyIn{own, 0, arg.host_data, arg.host_nbytes});
      p.bindings.push_back(SetBuffer{own, 0, index});
      p.accesses.push_back({own, 0, index, false, false});
      return;
    }
    bind_at(u.buffer, offset, arg.host_nbytes, arg.written, param, index, p);
  }

  // Whether a call planned before the current one may write host memory overlapping [data, data + n).
  bool written_before(const void* data, std::size_t n) const {
    const char* start = static_cast<const char*>(data);
    for (const HostRange& w : written_host_)
      if (start < w.start + w.length && w.start < start + n) return true;
    return false;
  }

  static std::size_t binding_alignment(const ParamInfo& param) {
    return param.address_space == AddressSpace::constant ? kConstantOffsetAlignment
                                                         : std::max<std::size_t>(param.element_align, 1);
  }

  // `length` bytes of `buffer` from `offset`. setBuffer:offset: wants constant-space offsets at
  // multiples of 256 bytes on macOS, device-space ones at multiples of the data type's alignment:
  // elsewhere the call gets an aligned copy, made by a blit before its pass (and back after it).
  // The blit's offsets and size are whole 4-byte words (macOS): the size is rounded up, inside the
  // buffer (its length is whole words, storage_length); an offset that is not a word's cannot be
  // copied so (host memory gets a host copy instead, bind_host_memory).
  void bind_at(std::size_t buffer, std::size_t offset, std::size_t length, bool writes, const ParamInfo& param,
               std::uint32_t index, CallPlan& p) {
    if (offset % binding_alignment(param) == 0) {
      p.bindings.push_back(SetBuffer{buffer, offset, index});
      p.accesses.push_back({buffer, offset, index, writes, false});
      return;
    }
    if (offset % kBufferCopyGranule != 0)
      throw ArgumentError(argument_name(kernel_of(p), param) + " lies " + std::to_string(offset) +
                          " bytes into its buffer (a view of a Buffer there), an offset which its " +
                          (param.address_space == AddressSpace::constant ? "constant" : "device") +
                          " address space does not allow (setBuffer:offset:), and which a blit cannot realign (buffer "
                          "blits move whole 4-byte words on macOS): bind a view at a multiple of 4 bytes, or a copy");
    const std::size_t words = round_up(length, kBufferCopyGranule);
    const std::size_t copy = add_buffer({PlanBuffer::Source::staging, nullptr, nullptr, words});
    p.before.push_back(BlitBufferCopy{buffer, offset, copy, 0, words});
    p.bindings.push_back(SetBuffer{copy, 0, index});
    // Back in whole words too: the bytes past the view's end come back as the blit found them.
    if (writes) p.after.push_back(BlitBufferCopy{copy, 0, buffer, offset, words});
  }

  void bind_texture(const Texture& bound, const std::shared_ptr<BufferStorage>& storage, const ParamInfo& param,
                    const KernelInfo& kernel, std::uint32_t index, CallPlan& p) {
    const std::size_t buffer = storage_buffer(storage, kernel, param, "texture");
    const bool writes = param.texture_access == TextureAccess::write || param.texture_access == TextureAccess::read_write;
    // Texture atomics need MTLTextureUsageShaderAtomic (r32uint / r32sint textures a kernel that has them writes).
    const bool atomic = kernel.texture_atomics && param.texture_access == TextureAccess::read_write &&
                        bound.descriptor().format.channels == 1 && bound.descriptor().format.bits == 32 && !bound.descriptor().format.packed() &&
                        (bound.descriptor().format.kind == PixelKind::uint || bound.descriptor().format.kind == PixelKind::sint);
    // A texture buffer lives over its buffer whatever its usage (Metal makes no other).
    const bool texture_buffer = bound.descriptor().type == TextureType::texture_buffer;
    if (texture_over_buffer(bound.descriptor()) && (!atomic || texture_buffer)) {
      plan_.textures.push_back({PlanTexture::Source::over_buffer, buffer, &bound,
                                metal_descriptor(bound, PlanTexture::Source::over_buffer), bound.row_pitch()});
      plan_.textures.back().descriptor.shader_atomic = atomic;
      p.bindings.push_back(SetTexture{plan_.textures.size() - 1, index});
      p.accesses.push_back({buffer, 0, index, writes, true});
      return;
    }
    // A texture bound at several indices of one call is one MTLTexture, as on Metal: writes
    // through one binding are in the texture the others see, and it is copied in and out once.
    std::size_t texture = kNone;
    for (const auto& [staged_buffer, staged] : call_staged_)
      if (staged_buffer == buffer) texture = staged;
    if (texture == kNone) {
      plan_.textures.push_back(
          {PlanTexture::Source::staged, buffer, &bound, metal_descriptor(bound, PlanTexture::Source::staged), 0});
      texture = plan_.textures.size() - 1;
      call_staged_.emplace_back(buffer, texture);
      for (const ImageCopy& c : image_copies(bound)) p.before.push_back(BlitToTexture{buffer, texture, c});
    }
    plan_.textures[texture].descriptor.shader_atomic = plan_.textures[texture].descriptor.shader_atomic || atomic;
    if (writes && !plan_.textures[texture].descriptor.shader_write) {
      plan_.textures[texture].descriptor.shader_write = true;
      for (const ImageCopy& c : image_copies(bound)) p.after.push_back(BlitToBuffer{texture, buffer, c});
    }
    p.bindings.push_back(SetTexture{texture, index});
    // The blits order the staged texture against other passes: the buffer is accessed by blits only.
  }

  // The MTLTextureDescriptor: over a buffer, a 2-D texture of one level in the buffer's shared
  // storage with the usage the Texture was made with; staged, the texture's own type, levels and
  // slices in private storage (only blits and kernels touch it), read by the blit that fills it and
  // written where a call writes it (the planner sets shader_write then).
  static PlanTextureDescriptor metal_descriptor(const Texture& t, PlanTexture::Source source) {
    using Type = PlanTextureDescriptor::Type;
    const TextureDescriptor& d = t.descriptor();
    PlanTextureDescriptor m;
    m.format = d.format;
    m.width = d.width;
    m.height = d.height;
    if (source == PlanTexture::Source::over_buffer) {
      if (d.type == TextureType::texture_buffer) m.type = Type::texture_buffer;
      m.shader_read = (d.usage & usage_read) != 0;
      m.shader_write = (d.usage & usage_write) != 0;
      return m;
    }
    switch (d.type) {
      case TextureType::texture1d: m.type = Type::type1d; break;
      case TextureType::texture1d_array: m.type = Type::type1d_array; break;
      case TextureType::texture3d: m.type = Type::type3d; break;
      case TextureType::texture2d_array:
      case TextureType::depth2d_array: m.type = Type::type2d_array; break;
      case TextureType::texturecube:
      case TextureType::depthcube: m.type = Type::cube; break;
      case TextureType::texturecube_array:
      case TextureType::depthcube_array: m.type = Type::cube_array; break;
      default: break;  // texture2d, depth2d (multisampled textures: check_metal_texture refuses them)
    }
    m.depth32_float = is_depth(d.type);
    m.depth = d.type == TextureType::texture3d ? d.depth : 1;
    // A cube texture is one cube (its 6 faces are slices); an array's arrayLength counts elements
    // (cubes for a cube array, 6 slices each).
    m.array_length = is_array(d.type) ? d.array_length : 1;
    m.mipmap_levels = t.mip_levels();
    m.private_storage = true;
    m.shader_read = true;
    return m;
  }

  static std::vector<ImageCopy> image_copies(const Texture& t) {
    std::vector<MipLevel> levels;
    for (std::uint32_t i = 0; i < t.mip_levels(); ++i) levels.push_back(t.mip_level(i));
    return staged_image_copies(t.descriptor(), levels);
  }

  // The type of the textures a sampler of this call may sample: the first sampled texture
  // whose type Metal's unnormalised-coordinate rule refuses, else texture2d (none when no texture).
  static TextureType sampled_type(const DispatchCommand& command, const KernelInfo& kernel) {
    TextureType found = TextureType::none;
    for (std::size_t i = 0; i < command.args.size(); ++i) {
      const ParamInfo& param = kernel.params[i];
      if (command.args[i].absent || param.kind != ParamKind::texture || param.texture_access != TextureAccess::sample)
        continue;
      const TextureType type = command.args[i].texture.descriptor().type;
      if (type != TextureType::texture1d && type != TextureType::texture2d && type != TextureType::depth2d) return type;
      found = type;
    }
    return found;
  }

  Step dispatch_step(const DispatchCommand& command, const KernelInfo& kernel) const {
    // Core has checked the threadgroup against the pipeline's limit and skipped empty grids.
    if (target_.nonuniform_threadgroups) {
      DispatchThreads d{};
      for (int i = 0; i < 3; ++i) d.threads[i] = command.grid[i], d.group[i] = command.threadgroup[i];
      return d;
    }
    // Without non-uniform threadgroups only whole threadgroups run; the kernel must still
    // see the exact grid, so a grid that does not divide is refused rather than padded.
    DispatchThreadgroups d{};
    for (int i = 0; i < 3; ++i) {
      if (command.grid[i] % command.threadgroup[i] != 0)
        throw ArgumentError("kernel '" + kernel.name + "': " + target_.name + " runs whole threadgroups only, and grid " +
                            shape(command.grid) + " is not a multiple of threadgroup " + shape(command.threadgroup) +
                            ": pass threadgroup= with sizes that divide the grid");
      d.groups[i] = command.grid[i] / command.threadgroup[i];
      d.group[i] = command.threadgroup[i];
    }
    return d;
  }

  const PlanTarget& target_;
  Plan plan_;
  std::vector<HostUnion> unions_;
  std::map<const PlanBufferStorage*, std::size_t> storages_;
  std::size_t empty_ = kNone;
  Pass pass_ = Pass::none;
  std::vector<BufferBinding> pass_accesses_;  // of the open compute pass
  std::vector<std::pair<std::size_t, std::size_t>> call_staged_;  // (buffer, staged texture) of the call being planned
  std::vector<HostRange> written_host_;  // host memory the calls planned so far may write
};

}  // namespace

Plan make_plan(std::vector<DispatchCommand>&& commands, const PlanTarget& target) {
  return Planner(std::move(commands), target).run();
}

}  // namespace metalcall::metal
