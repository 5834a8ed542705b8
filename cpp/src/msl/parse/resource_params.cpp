// Texture and sampler kernel parameters (see resource_params.hpp).
#include "msl/parse/resource_params.hpp"

#include <vector>


namespace metalcall::msl {

namespace {

std::string trim(std::string s) {
  while (!s.empty() && s.front() == ' ') s.erase(s.begin());
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

TextureType texture_type_from_name(const std::string& base) {
  static const std::pair<const char*, TextureType> kTypes[] = {
      {"texture1d", TextureType::texture1d},     {"texture2d", TextureType::texture2d},
      {"texture3d", TextureType::texture3d},     {"texture2d_array", TextureType::texture2d_array},
      {"texturecube", TextureType::texturecube}, {"depth2d", TextureType::depth2d},
      {"texturecube_array", TextureType::texturecube_array}, {"depth2d_array", TextureType::depth2d_array},
      {"depthcube", TextureType::depthcube}, {"depthcube_array", TextureType::depthcube_array},
      {"texture2d_ms", TextureType::texture2d_ms}, {"texture2d_ms_array", TextureType::texture2d_ms_array},
      {"depth2d_ms", TextureType::depth2d_ms}, {"depth2d_ms_array", TextureType::depth2d_ms_array},
      {"texture1d_array", TextureType::texture1d_array}, {"texture_buffer", TextureType::texture_buffer},
  };
  for (const auto& [name, t] : kTypes)
    if (base == name) return t;
  return TextureType::none;
}

// The top-level comma-separated parts of a template argument list.
std::vector<std::string> template_arguments(const std::string& args) {
  std::vector<std::string> out(1);
  int depth = 0;
  for (char c : args) {
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
    if (c == ',' && depth == 0) out.emplace_back();
    else out.back() += c;
  }
  for (auto& a : out) a = trim(a);
  return out;
}

}  // namespace

std::string classify_resource_param(const std::string& type, bool has_binding, ParamInfo& info,
                                    const std::function<std::string(const std::string&)>& resolve) {
  const std::size_t lt = type.find('<');
  const std::string base = trim(type.substr(0, lt));
  // `array<texture2d<float>, N> t [[texture(i)]]`: N textures at indices i .. i + N - 1.
  if (base == "array" && lt != std::string::npos && info.kind == ParamKind::texture) {
    const auto parts = template_arguments(type.substr(lt + 1, type.rfind('>') - lt - 1));
    const std::string& count = parts.back();
    if (parts.size() != 2 || count.empty() || count.find_first_not_of("0123456789") != std::string::npos ||
        count.size() > 4 || std::stoi(count) == 0)
      return "parameter '" + info.name + "': an array of textures is array<texture type, N> with N a positive integer literal";
    const std::string problem = classify_resource_param(resolve ? resolve(parts[0]) : parts[0], has_binding, info, resolve);
    if (!problem.empty() || info.kind != ParamKind::texture) return problem;
    info.texture_count = std::stoi(count);
    return "";
  }
  const TextureType texture_type = texture_type_from_name(base);
  const bool is_sampler = base == "sampler";
  if (texture_type == TextureType::none && !is_sampler) {
    if (info.kind == ParamKind::texture || info.kind == ParamKind::sampler) {
      return std::string("parameter '") + info.name + "' has [[" + to_string(info.kind) + "(n)]] but type '" +
             info.type_name + "'; use a texture type (texture2d<T, access>, depth2d<float, access>...), array<texture type, N> or sampler";
    }
    return "";
  }
  const bool bound_as_buffer = info.kind == ParamKind::buffer && has_binding;
  if (is_sampler) {
    if (info.kind == ParamKind::texture || bound_as_buffer)
      return "sampler parameter '" + info.name + "' must be bound with [[sampler(n)]]";
    info.kind = ParamKind::sampler;
    info.is_const = true;
    return "";
  }
  if (info.kind == ParamKind::sampler || bound_as_buffer)
    return "texture parameter '" + info.name + "' must be bound with [[texture(n)]]";
  info.kind = ParamKind::texture;
  info.texture_type = texture_type;
  for (std::size_t at; (at = info.type_name.find("< ")) != std::string::npos;) info.type_name.erase(at + 1, 1);
  // The template arguments: the element type, then the access (MSL's default: access::sample).
  const std::string args = lt == std::string::npos ? "" : type.substr(lt + 1, type.rfind('>') - lt - 1);
  // Then (MSL 3.2) the memory coherence, memory_coherence_threadgroup or _device: one memory here.
  const auto parts = template_arguments(args);
  const std::string element = resolve ? resolve(parts[0]) : parts[0];
  std::string access = parts.size() > 1 ? parts[1] : "";
  if (parts.size() > 2 && parts[2] != "memory_coherence_threadgroup" && parts[2] != "memory_coherence_device")
    return "texture parameter '" + info.name + "': unknown memory coherence '" + parts[2] + "'";
  if (access.rfind("access", 0) == 0) access = trim(access.substr(6));
  if (access.rfind("::", 0) == 0) access = trim(access.substr(2));
  info.scalar = scalar_type_from_name(element);
  info.vector_width = 4;
  const ScalarType s = info.scalar;
  if (s != ScalarType::f32 && s != ScalarType::f16 && s != ScalarType::i32 && s != ScalarType::u32 &&
      s != ScalarType::i16 && s != ScalarType::u16) {
    return "texture parameter '" + info.name + "': the element type must be float, half, int, uint, short or ushort, not '" +
           element + "'";
  }
  if (is_depth(texture_type) && s != ScalarType::f32)
    return "depth texture parameter '" + info.name + "' must have element type float";
  // Multisampled textures are read, not sampled: access::read is their default.
  if (access.empty() && (is_multisample(texture_type) || texture_type == TextureType::texture_buffer)) access = "read";
  if (texture_type == TextureType::texture_buffer && access == "sample")
    return "texture_buffer parameter '" + info.name + "' takes access::read, write or read_write (texture buffers are not sampled)";
  if (is_multisample(texture_type) && access != "read")
    return "multisampled texture parameter '" + info.name + "' takes access::read only";
  if (access.empty() || access == "sample") info.texture_access = TextureAccess::sample;
  else if (access == "read") info.texture_access = TextureAccess::read;
  else if (access == "write") info.texture_access = TextureAccess::write;
  else if (access == "read_write") info.texture_access = TextureAccess::read_write;
  else return "texture parameter '" + info.name + "': unknown access '" + access + "'";
  info.is_const = info.texture_access == TextureAccess::sample || info.texture_access == TextureAccess::read;
  return "";
}

}  // namespace metalcall::msl
