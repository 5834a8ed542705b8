// The Metal backend's plain C++ logic: everything that needs no GPU, so it is tested
// off a Mac (tools/metal_check/logic_test.cpp).
#include "backends/metal/metal_backend.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/scalar_packing.hpp"
#include "metalcall/errors.hpp"

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

// Bindings metalcall has no way to feed make the whole kernel unusable.
void reject_unsupported(const std::string& kernel, const std::vector<BindingInfo>& bindings) {
  for (const BindingInfo& binding : bindings) {
    if (binding.kind == BindingInfo::Kind::buffer ||
        binding.kind == BindingInfo::Kind::threadgroup_memory)
      continue;
    throw CompileError("[metal::Library] Kernel '" + kernel + "' takes a " + kind_name(binding.kind) +
                       " ('" + binding.name + "', index " + std::to_string(binding.index) +
                       "); metalcall binds only buffers, constants and threadgroup memory: "
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
    return CompileError("[metal::Library] The MSL front end and Metal disagree about kernel '" +
                        kernel.name + "': " + what +
                        ". This is a metalcall bug: please report it with the kernel source");
  };
  for (ParamInfo& param : kernel.params) {
    const BindingInfo* binding = nullptr;
    if (param.binding < 0 && param.kind != ParamKind::builtin) {
      // An index the front end could not evaluate (an enum constant): Metal's, by name.
      const auto kind = param.kind == ParamKind::threadgroup_memory ? BindingInfo::Kind::threadgroup_memory
                                                                    : BindingInfo::Kind::buffer;
      for (const BindingInfo& b : bindings)
        if (b.kind == kind && b.name == param.name) param.binding = b.index;
    }
    if (binds_buffer(param.kind))
      binding = find(BindingInfo::Kind::buffer, param.binding);
    else if (param.kind == ParamKind::threadgroup_memory)
      binding = find(BindingInfo::Kind::threadgroup_memory, param.binding);
    if (!binding) continue;  // Metal may leave out an argument the kernel never reads
    if (!param.name.empty() && !binding->name.empty() && param.name != binding->name)
      throw disagree("index " + std::to_string(param.binding) + " is '" + param.name +
                     "' in the source but '" + binding->name + "' in Metal's reflection");
    param.element_size = binding->data_size;
    param.element_align = binding->alignment;
  }
  for (const BindingInfo& binding : bindings) {
    const bool known = std::any_of(kernel.params.begin(), kernel.params.end(), [&](const ParamInfo& p) {
      return p.binding == binding.index &&
             (binding.kind == BindingInfo::Kind::buffer ? binds_buffer(p.kind)
                                                        : p.kind == ParamKind::threadgroup_memory);
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
  // Buffers first, then threadgroup memory, each by index: the order calls bind them in.
  std::sort(ordered.begin(), ordered.end(), [](const BindingInfo* a, const BindingInfo* b) {
    if (a->kind != b->kind) return a->kind == BindingInfo::Kind::buffer;
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
    throw CompileError("[metal::Device] Unknown Metal language version '" + text +
                       "': give it as major.minor, e.g. \"3.1\", or leave it empty for the newest");
  return {text[0] - '0', text[2] - '0'};
}

CompileDiagnostic parse_compile_log(const std::string& log, const std::string& source) {
  CompileDiagnostic diagnostic;
  std::size_t start = 0;
  std::string first_text;
  while (start <= log.size()) {
    std::size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    const std::string line = log.substr(start, end - start);
    start = end + 1;
    if (first_text.empty() && line.find_first_not_of(" \t\r") != std::string::npos) first_text = line;
    // Clang-style "<file>:<line>:<column>: error: <text>" (or "fatal error:").
    std::size_t marker = line.find(": error: ");
    std::size_t skip = 9;
    if (marker == std::string::npos) {
      marker = line.find(": fatal error: ");
      skip = 15;
    }
    if (marker == std::string::npos) continue;
    diagnostic.message = line.substr(marker + skip);
    const std::string where = line.substr(0, marker);  // "program_source:12:5"
    const std::size_t colon2 = where.rfind(':');
    const std::size_t colon1 = colon2 == std::string::npos || colon2 == 0 ? std::string::npos
                                                                           : where.rfind(':', colon2 - 1);
    if (colon1 != std::string::npos) {
      const std::string line_text = where.substr(colon1 + 1, colon2 - colon1 - 1);
      const std::string column_text = where.substr(colon2 + 1);
      const bool digits = !line_text.empty() && !column_text.empty() &&
                          line_text.find_first_not_of("0123456789") == std::string::npos &&
                          column_text.find_first_not_of("0123456789") == std::string::npos &&
                          line_text.size() < 9 && column_text.size() < 9;
      if (digits) {
        diagnostic.line = std::stoi(line_text);
        diagnostic.column = std::stoi(column_text);
      }
    }
    break;
  }
  if (diagnostic.message.empty()) diagnostic.message = first_text.empty() ? "unknown error" : first_text;
  if (diagnostic.line > 0) {
    std::size_t at = 0;
    for (int n = 1; n < diagnostic.line && at != std::string::npos; ++n) {
      at = source.find('\n', at);
      if (at != std::string::npos) ++at;
    }
    if (at != std::string::npos && at <= source.size()) {
      std::size_t stop = source.find('\n', at);
      if (stop == std::string::npos) stop = source.size();
      diagnostic.source_line = source.substr(at, stop - at);
      if (!diagnostic.source_line.empty() && diagnostic.source_line.back() == '\r')
        diagnostic.source_line.pop_back();
    }
  }
  return diagnostic;
}

CompileError compile_error_from_log(const std::string& scope, const std::string& what,
                                    const std::string& log, const std::string& source) {
  const CompileDiagnostic d = parse_compile_log(log, source);
  std::string message = scope + " Unable to build " + what + ": ";
  if (d.line > 0) message += "line " + std::to_string(d.line) + ", column " + std::to_string(d.column) + ": ";
  message += d.message;
  if (!d.source_line.empty()) message += "\n    " + d.source_line;
  return CompileError(message, log, d.line, d.column, d.source_line);
}

std::vector<std::uint8_t> pack_function_constant(ScalarType scalar, int width, const Argument& value,
                                                 const std::string& label) {
  ParamInfo as_param;
  as_param.binding = -1;  // pack_scalar then takes the name as the whole description
  as_param.name = "[metal::Library] Function constant " + label;
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

}  // namespace metalcall::metal
