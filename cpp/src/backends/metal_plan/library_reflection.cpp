// Metal's reflection against the MSL front end's (library_reflection.hpp).
#include "backends/metal_plan/library_reflection.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "metalcall/errors.hpp"

namespace metalcall::metal {

void check_kernel_names(const std::vector<std::string>& reflected, const std::vector<std::string>& compiled,
                        const std::string& scope) {
  std::map<std::string, int> count;  // +1 per reflection, +1000 per compiled name
  for (const std::string& name : reflected) count[name] += 1;
  for (const std::string& name : compiled) count[name] += 1000;
  std::string twice, only_reflected, only_compiled;
  auto add = [](std::string& list, const std::string& name) { list += (list.empty() ? "'" : ", '") + name + "'"; };
  for (const auto& [name, n] : count) {
    if (n % 1000 > 1) add(twice, name);
    if (n < 1000) add(only_reflected, name);
    else if (n % 1000 == 0) add(only_compiled, name);
  }
  if (twice.empty() && only_reflected.empty() && only_compiled.empty()) return;
  std::string what;
  if (!twice.empty()) what += "the front end found " + twice + " more than once";
  if (!only_compiled.empty())
    what += std::string(what.empty() ? "" : "; ") + "Metal lists " + only_compiled + " that the front end did not find";
  if (!only_reflected.empty())
    what += std::string(what.empty() ? "" : "; ") + "the front end found " + only_reflected +
            " that the compiled library does not have";
  throw CompileError(scope + " the MSL front end and Metal disagree about the kernels of this source: " + what +
                     ". This is a metalcall bug: please report it with the kernel source (and the defines= given)");
}

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
void reject_unsupported(const std::string& scope, const std::string& kernel, const std::vector<BindingInfo>& bindings) {
  for (const BindingInfo& binding : bindings) {
    if (binding.kind != BindingInfo::Kind::other) continue;
    throw CompileError(scope + " kernel '" + kernel + "' takes a " + kind_name(binding.kind) +
                       " ('" + binding.name + "', index " + std::to_string(binding.index) +
                       "); metalcall binds only buffers, constants, threadgroup memory, textures and samplers: "
                       "pass the data through a device buffer instead");
  }
}

}  // namespace

void merge_reflection(KernelInfo& kernel, const std::vector<BindingInfo>& bindings, const std::string& scope) {
  reject_unsupported(scope, kernel.name, bindings);
  auto find = [&](BindingInfo::Kind kind, int index) -> const BindingInfo* {
    for (const BindingInfo& binding : bindings)
      if (binding.kind == kind && binding.index == index) return &binding;
    return nullptr;
  };
  auto disagree = [&](const std::string& what) {
    return CompileError(scope + " the MSL front end and Metal disagree about kernel '" +
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
  reject_unsupported("[metal]", name, bindings);
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

}  // namespace metalcall::metal
