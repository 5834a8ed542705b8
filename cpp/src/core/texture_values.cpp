// The texture and sampler values of the public API that need no device: pixel-format names,
// a texture's layout (slices, mip levels), sampler option names. Plain values, so that code
// that plans textures (backends/metal_plan) links without the rest of core.
#include <algorithm>
#include <string>
#include <vector>

#include "metalcall/errors.hpp"
#include "metalcall/texture.hpp"

namespace metalcall {

namespace {

std::uint32_t halved(std::uint32_t n, std::uint32_t level) { return std::max<std::uint32_t>(1, n >> level); }

const char* kind_suffix(PixelKind k) {
  switch (k) {
    case PixelKind::unorm: return "unorm";
    case PixelKind::snorm: return "snorm";
    case PixelKind::uint: return "uint";
    case PixelKind::sint: return "sint";
    case PixelKind::float_: return "float";
  }
  return "?";
}

}  // namespace

std::string PixelFormat::name() const {
  switch (layout) {
    case PixelLayout::rgb10a2: return kind == PixelKind::uint ? "rgb10a2uint" : "rgb10a2unorm";
    case PixelLayout::rg11b10: return "rg11b10float";
    case PixelLayout::rgb9e5: return "rgb9e5float";
    case PixelLayout::bgra: return srgb ? "bgra8unorm_srgb" : "bgra8unorm";
    case PixelLayout::plain: break;
  }
  const char* c = channels == 1 ? "r" : channels == 2 ? "rg" : "rgba";
  return c + std::to_string(bits) + kind_suffix(kind) + (srgb ? "_srgb" : "");
}

const std::vector<PixelFormat>& pixel_formats() {
  static const auto& all = *new std::vector<PixelFormat>([] {
    std::vector<PixelFormat> out;
    for (int channels : {1, 2, 4})
      for (int bits : {8, 16, 32})
        for (PixelKind kind : {PixelKind::unorm, PixelKind::snorm, PixelKind::uint, PixelKind::sint, PixelKind::float_}) {
          // Metal has no 8-bit float, and no 32-bit normalized formats.
          if ((kind == PixelKind::float_ && bits == 8) || ((kind == PixelKind::unorm || kind == PixelKind::snorm) && bits == 32))
            continue;
          out.push_back({channels, bits, kind});
          // sRGB: unorm8 only (R8Unorm_sRGB and RG8Unorm_sRGB are Apple GPUs' alone: the Metal plan says so).
          if (kind == PixelKind::unorm && bits == 8) out.push_back({channels, bits, kind, PixelLayout::plain, true});
        }
    out.push_back({4, 8, PixelKind::unorm, PixelLayout::bgra, false});
    out.push_back({4, 8, PixelKind::unorm, PixelLayout::bgra, true});
    out.push_back({1, 32, PixelKind::unorm, PixelLayout::rgb10a2, false});
    out.push_back({1, 32, PixelKind::uint, PixelLayout::rgb10a2, false});
    out.push_back({1, 32, PixelKind::float_, PixelLayout::rg11b10, false});
    out.push_back({1, 32, PixelKind::float_, PixelLayout::rgb9e5, false});
    return out;
  }());
  return all;
}

PixelFormat PixelFormat::parse(const std::string& name) {
  for (const PixelFormat& f : pixel_formats())
    if (f.name() == name) return f;
  throw ArgumentError("unknown pixel format '" + name + "'; use r, rg or rgba, then 8, 16 or 32, then unorm, snorm, "
                      "uint, sint or float, as Metal names them (\"rgba8unorm\", \"r32float\", \"rg16sint\"; Metal has "
                      "no 8-bit float and no 32-bit unorm/snorm formats), an sRGB form (r8unorm_srgb, rg8unorm_srgb, "
                      "rgba8unorm_srgb, bgra8unorm_srgb), bgra8unorm, or a packed format (rgb10a2unorm, rgb10a2uint, "
                      "rg11b10float, rgb9e5float)");
}

std::uint32_t Texture::slices(std::uint32_t level) const {
  const TextureDescriptor& d = descriptor_;
  if (d.type == TextureType::texture3d) return halved(d.depth, level);
  if (d.type == TextureType::texturecube || d.type == TextureType::depthcube) return 6;
  if (d.type == TextureType::texturecube_array || d.type == TextureType::depthcube_array) return 6 * d.array_length;
  return (is_array(d.type) ? d.array_length : 1) * (is_multisample(d.type) ? d.sample_count : 1);
}

const MipLevel& Texture::mip_level(std::uint32_t level) const {
  if (level >= levels_.size())
    throw ArgumentError("mip level " + std::to_string(level) + " does not exist: the texture has " +
                        std::to_string(levels_.size()) + " (0 to " + std::to_string(levels_.size() - 1) + ")");
  return levels_[level];
}

std::uint32_t full_mip_levels(const TextureDescriptor& d) {
  const bool one_d = d.type == TextureType::texture1d || d.type == TextureType::texture1d_array ||
                     d.type == TextureType::texture_buffer;
  std::uint32_t largest = std::max(d.width, one_d ? 1u : d.height);
  if (d.type == TextureType::texture3d) largest = std::max(largest, d.depth);
  std::uint32_t levels = 1;
  while (largest >>= 1) ++levels;
  return levels;
}

const char* to_string(SamplerFilter f) { return f == SamplerFilter::linear ? "linear" : "nearest"; }

const char* to_string(SamplerAddress a) {
  switch (a) {
    case SamplerAddress::clamp_to_edge: return "clamp_to_edge";
    case SamplerAddress::mirrored_clamp_to_edge: return "mirrored_clamp_to_edge";
    case SamplerAddress::repeat: return "repeat";
    case SamplerAddress::mirrored_repeat: return "mirrored_repeat";
    case SamplerAddress::clamp_to_zero: return "clamp_to_zero";
    case SamplerAddress::clamp_to_border: return "clamp_to_border";
  }
  return "?";
}

const char* to_string(SamplerMipFilter f) {
  return f == SamplerMipFilter::linear ? "linear" : f == SamplerMipFilter::nearest ? "nearest" : "none";
}

const char* to_string(SamplerCompare c) {
  static const char* const names[] = {"none", "less", "less_equal", "greater", "greater_equal",
                                      "equal", "not_equal", "always", "never"};
  return names[static_cast<int>(c)];
}

SamplerCompare sampler_compare_from_name(const std::string& name) {
  for (int i = 0; i <= static_cast<int>(SamplerCompare::never); ++i)
    if (name == to_string(static_cast<SamplerCompare>(i))) return static_cast<SamplerCompare>(i);
  throw ArgumentError("unknown compare function '" + name + "'; use none, less, less_equal, greater, greater_equal, "
                      "equal, not_equal, always or never");
}

SamplerMipFilter sampler_mip_filter_from_name(const std::string& name) {
  for (SamplerMipFilter f : {SamplerMipFilter::none, SamplerMipFilter::nearest, SamplerMipFilter::linear})
    if (name == to_string(f)) return f;
  throw ArgumentError("unknown mip filter '" + name + "'; use \"none\", \"nearest\" or \"linear\"");
}

SamplerFilter sampler_filter_from_name(const std::string& name) {
  if (name == "nearest") return SamplerFilter::nearest;
  if (name == "linear") return SamplerFilter::linear;
  throw ArgumentError("unknown sampler filter '" + name + "'; use \"nearest\" or \"linear\"");
}

SamplerAddress sampler_address_from_name(const std::string& name) {
  for (int i = 0; i <= 5; ++i)
    if (name == to_string(static_cast<SamplerAddress>(i))) return static_cast<SamplerAddress>(i);
  throw ArgumentError("unknown sampler address mode '" + name + "'; use clamp_to_edge, mirrored_clamp_to_edge, repeat, "
                      "mirrored_repeat, clamp_to_zero or clamp_to_border");
}

}  // namespace metalcall
