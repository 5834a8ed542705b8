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

std::vector<std::size_t> device_order(const std::vector<GpuTraits>& gpus) {
  std::vector<std::size_t> order;
  auto first_where = [&](auto&& wanted) {
    for (std::size_t i = 0; i < gpus.size(); ++i)
      if (wanted(gpus[i])) return i;
    return gpus.size();
  };
  // The built-in high-power GPU, as MTLCreateSystemDefaultDevice picks it; else any built-in one.
  std::size_t preferred = first_where([](const GpuTraits& g) { return !g.removable && !g.low_power; });
  if (preferred == gpus.size()) preferred = first_where([](const GpuTraits& g) { return !g.removable; });
  if (preferred == gpus.size() && !gpus.empty()) preferred = 0;
  if (preferred < gpus.size()) order.push_back(preferred);
  for (std::size_t i = 0; i < gpus.size(); ++i)
    if (i != preferred) order.push_back(i);
  return order;
}

}  // namespace metalcall::metal
