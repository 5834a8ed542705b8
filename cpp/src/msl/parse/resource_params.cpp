// Texture and sampler kernel parameters (see resource_params.hpp).
#include "msl/parse/resource_params.hpp"

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
  };
  for (const auto& [name, t] : kTypes)
    if (base == name) return t;
  return TextureType::none;
}

}  // namespace

std::string classify_resource_param(const std::string& type, bool has_binding, ParamInfo& info) {
  const std::size_t lt = type.find('<');
  const std::string base = trim(type.substr(0, lt));
  const TextureType texture_type = texture_type_from_name(base);
  const bool is_sampler = base == "sampler";
  if (texture_type == TextureType::none && !is_sampler) {
    if (info.kind == ParamKind::texture || info.kind == ParamKind::sampler) {
      return std::string("parameter '") + info.name + "' has [[" + to_string(info.kind) + "(n)]] but type '" +
             info.type_name + "'; use texture1d/2d/3d/2d_array/cube<T, access>, depth2d<float, access> or sampler";
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
  const std::size_t comma = args.find(',');
  const std::string element = trim(args.substr(0, comma));
  std::string access = comma == std::string::npos ? "" : trim(args.substr(comma + 1));
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
  if (texture_type == TextureType::depth2d && s != ScalarType::f32)
    return "depth texture parameter '" + info.name + "' must have element type float";
  if (access.empty() || access == "sample") info.texture_access = TextureAccess::sample;
  else if (access == "read") info.texture_access = TextureAccess::read;
  else if (access == "write") info.texture_access = TextureAccess::write;
  else if (access == "read_write") info.texture_access = TextureAccess::read_write;
  else return "texture parameter '" + info.name + "': unknown access '" + access + "'";
  info.is_const = info.texture_access == TextureAccess::sample || info.texture_access == TextureAccess::read;
  return "";
}

}  // namespace metalcall::msl
