// The Metal backend's plain C++ logic: everything that needs no GPU, so it is tested
// off a Mac (tools/metal_check/logic_test.cpp).
#include "backends/metal/metal_backend.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "core/scalar_packing.hpp"
#include "metalcall/errors.hpp"
#include "msl/errors/diagnostics.hpp"
#include "msl/translate/translator.hpp"

namespace metalcall::metal {
namespace {

const char* kind_name(BindingInfo::Kind kind) {
  switch (kind) {
    case BindingInfo::Kind::buffer: return "buffer";
    case BindingInfo::Kind::threadgroup_memory: return "threadgroup memory";
    case BindingInfo::Kind::texture: return "texture";
    case BindingInfo::Kind::sampler: return "sampler";
    case BindingInfo::Kind::other: break;
  }
  return "resource";
}

bool binds_buffer(ParamKind kind) {
  return kind == ParamKind::buffer || kind == ParamKind::reference || kind == ParamKind::value;
}

// The kind of Metal binding a parameter of `kind` has.
BindingInfo::Kind binding_kind(ParamKind kind) {
  if (binds_buffer(kind)) return BindingInfo::Kind::buffer;
  if (kind == ParamKind::threadgroup_memory) return BindingInfo::Kind::threadgroup_memory;
  if (kind == ParamKind::texture) return BindingInfo::Kind::texture;
  if (kind == ParamKind::sampler) return BindingInfo::Kind::sampler;
  return BindingInfo::Kind::other;
}

// Bindings metalcall has no way to feed make the whole kernel unusable.
void reject_unsupported(const std::string& kernel, const std::vector<BindingInfo>& bindings) {
  for (const BindingInfo& binding : bindings) {
    if (binding.kind != BindingInfo::Kind::other) continue;
    throw CompileError("[metal] kernel '" + kernel + "' takes a " + kind_name(binding.kind) +
                       " ('" + binding.name + "', index " + std::to_string(binding.index) +
                       "); metalcall binds only buffers, constants, threadgroup memory, textures and samplers: "
                       "pass the data through a device buffer instead");
  }
}

}  // namespace

void merge_reflection(KernelInfo& kernel, const std::vector<BindingInfo>& bindings) {
  reject_unsupported(kernel.name, bindings);
  auto find = [&](BindingInfo::Kind kind, int index) -> const BindingInfo* {
    for (const BindingInfo& binding : bindings)
      if (binding.kind == kind && binding.index == index) return &binding;
    return nullptr;
  };
  auto disagree = [&](const std::string& what) {
    return CompileError("[metal] the MSL front end and Metal disagree about kernel '" +
                        kernel.name + "': " + what +
                        ". This is a metalcall bug: please report it with the kernel source");
  };
  for (ParamInfo& param : kernel.params) {
    const BindingInfo* binding = nullptr;
    if (param.binding < 0 && param.kind != ParamKind::builtin) {
      // An index the front end could not evaluate (an enum constant): Metal's, by name.
      const auto kind = binding_kind(param.kind);
      for (const BindingInfo& b : bindings)
        if (b.kind == kind && b.name == param.name) param.binding = b.index;
    }
    if (param.kind != ParamKind::builtin) binding = find(binding_kind(param.kind), param.binding);
    if (!binding) continue;  // Metal may leave out an argument the kernel never reads
    if (!param.name.empty() && !binding->name.empty() && param.name != binding->name)
      throw disagree("index " + std::to_string(param.binding) + " is '" + param.name +
                     "' in the source but '" + binding->name + "' in Metal's reflection");
    if (param.kind == ParamKind::texture || param.kind == ParamKind::sampler) continue;  // no data size
    param.element_size = binding->data_size;
    param.element_align = binding->alignment;
  }
  for (const BindingInfo& binding : bindings) {
    const bool known = std::any_of(kernel.params.begin(), kernel.params.end(), [&](const ParamInfo& p) {
      return p.binding == binding.index && p.kind != ParamKind::builtin && binding_kind(p.kind) == binding.kind;
    });
    if (!known)
      throw disagree(std::string("Metal reports ") + kind_name(binding.kind) + " '" + binding.name +
                     "' at index " + std::to_string(binding.index) +
                     " that the front end did not find");
  }
}

KernelInfo kernel_info_from_bindings(const std::string& name, const std::vector<BindingInfo>& bindings) {
  reject_unsupported(name, bindings);
  std::vector<const BindingInfo*> ordered;
  for (const BindingInfo& binding : bindings) ordered.push_back(&binding);
  // Buffers first, then threadgroup memory, textures and samplers (the Kind order), each by index.
  std::sort(ordered.begin(), ordered.end(), [](const BindingInfo* a, const BindingInfo* b) {
    if (a->kind != b->kind) return a->kind < b->kind;
    return a->index < b->index;
  });
  KernelInfo kernel;
  kernel.name = name;
  for (const BindingInfo* binding : ordered) {
    ParamInfo param;
    param.position = static_cast<int>(kernel.params.size());
    param.binding = binding->index;
    param.name = binding->name;
    const bool buffer = binding->kind == BindingInfo::Kind::buffer;
    // Metal does not say whether a buffer is a pointer or a constant reference, so
    // every buffer is a pointer parameter here; only the source can tell more.
    param.kind = buffer ? ParamKind::buffer : ParamKind::threadgroup_memory;
    if (binding->kind == BindingInfo::Kind::texture || binding->kind == BindingInfo::Kind::sampler) {
      // Without the source, the texture's type and element are unknown (TextureType::none): core checks less.
      param.kind = binding->kind == BindingInfo::Kind::texture ? ParamKind::texture : ParamKind::sampler;
      param.texture_access = binding->read_only ? TextureAccess::read : TextureAccess::read_write;
      param.is_const = binding->read_only;
      param.type_name = binding->kind == BindingInfo::Kind::texture ? "texture" : "sampler";
      kernel.params.push_back(std::move(param));
      continue;
    }
    param.address_space = buffer ? AddressSpace::device : AddressSpace::threadgroup;
    param.type_name = binding->type_name;
    param.scalar = binding->scalar;
    param.vector_width = binding->vector_width;
    param.is_const = buffer && binding->read_only;
    param.element_size = binding->data_size;
    param.element_align = binding->alignment;
    kernel.params.push_back(std::move(param));
  }
  return kernel;
}

std::pair<int, int> parse_language_version(const std::string& text) {
  const bool shaped = text.size() == 3 && text[0] >= '1' && text[0] <= '9' && text[1] == '.' &&
                      text[2] >= '0' && text[2] <= '9';
  if (!shaped)
    throw CompileError("[metal] unknown Metal language version '" + text +
                       "': give it as major.minor, e.g. \"3.1\", or leave it empty for the newest");
  return {text[0] - '0', text[2] - '0'};
}

std::vector<msl::Diagnostic> parse_compile_log(const std::string& log) {
  std::vector<msl::Diagnostic> diagnostics;
  std::size_t start = 0;
  while (start < log.size()) {
    std::size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    msl::Diagnostic d;
    if (msl::parse_clang_style_line(log.substr(start, end - start), d)) {
      // Metal names the source it was given "program_source".
      if (d.file == "program_source") d.file = msl::kSourceName;
      diagnostics.push_back(std::move(d));
    }
    start = end + 1;
  }
  return diagnostics;
}

CompileError compile_error_from_log(const std::string& log, const std::string& source, const std::string& what_failed) {
  return msl::compile_error(parse_compile_log(log), nullptr, source, log, what_failed);
}

std::vector<std::uint8_t> pack_function_constant(ScalarType scalar, int width, const Argument& value,
                                                 const std::string& label) {
  ParamInfo as_param;
  as_param.binding = -1;  // pack_scalar then takes the name as the whole description
  as_param.name = label;
  as_param.scalar = scalar;
  as_param.vector_width = width;
  as_param.element_size = scalar_size(scalar) * static_cast<std::size_t>(width == 3 ? 4 : width);  // float3 is 16 bytes
  if (as_param.element_size == 0)
    throw ArgumentError(as_param.name + " has a type metalcall cannot set; give it a scalar or vector type");
  if (value.kind != Argument::Kind::bytes) return pack_scalar(value, as_param);
  if (value.data.size() != as_param.element_size)
    throw ArgumentError(as_param.name + " takes " + std::to_string(as_param.element_size) + " bytes, got " +
                        std::to_string(value.data.size()));
  return value.data;
}

std::size_t no_copy_length(const void* data, std::size_t nbytes, std::size_t page_size,
                           std::size_t backing_bytes) {
  if (nbytes == 0 || page_size == 0) return 0;
  if (reinterpret_cast<std::uintptr_t>(data) % page_size != 0) return 0;
  const std::size_t rounded = round_up(nbytes, page_size);
  if (rounded == nbytes) return nbytes;
  return backing_bytes >= rounded ? rounded : 0;
}

// ---- staged textures ------------------------------------------------------------

bool texture_over_buffer(const TextureDescriptor& descriptor) {
  return descriptor.type == TextureType::texture2d && descriptor.mip_levels == 1;
}

void check_metal_texture(const TextureDescriptor& d) {
  // Metal's implementation limits (feature set tables, Apple3 and later, Mac2): 16384 texels
  // across a 1-D, 2-D or cube texture; 2048 in each dimension of a 3-D texture and slices of an array.
  const bool volume = d.type == TextureType::texture3d;
  const std::uint32_t most = volume ? 2048 : 16384;
  const std::uint32_t largest = std::max({d.width, d.height, volume ? d.depth : 1u});
  if (largest > most)
    throw ArgumentError("[metal] a " + std::string(to_string(d.type)) + " is at most " + std::to_string(most) +
                        " texels wide in each dimension on Metal, got " + std::to_string(largest));
  if (d.type == TextureType::texture2d_array && d.array_length > 2048)
    throw ArgumentError("[metal] a texture2d_array has at most 2048 slices on Metal, got " +
                        std::to_string(d.array_length));
}

std::vector<ImageCopy> staged_image_copies(const TextureDescriptor& d, const std::vector<MipLevel>& levels) {
  const bool volume = d.type == TextureType::texture3d;
  const std::uint32_t images = volume ? 1 : d.array_length;  // 1 for 1-D and 2-D, 6 for a cube
  std::vector<ImageCopy> copies;
  for (std::uint32_t level = 0; level < levels.size(); ++level) {
    const MipLevel& l = levels[level];
    for (std::uint32_t slice = 0; slice < images; ++slice) {
      ImageCopy c;
      c.slice = slice, c.level = level;
      c.offset = l.offset + slice * l.slice_pitch;
      c.bytes_per_row = l.row_pitch;
      c.bytes_per_image = volume ? l.slice_pitch : 0;
      c.width = l.width, c.height = l.height, c.depth = volume ? l.depth : 1;
      copies.push_back(c);
    }
  }
  return copies;
}

}  // namespace metalcall::metal
