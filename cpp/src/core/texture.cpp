// Textures and samplers in core: pixel-format names, Device::texture, and binding
// them to a call's [[texture(i)]] / [[sampler(i)]] parameters. The descriptors
// written here are what the translated kernels read: metal_texture.h's
// mtl_texture_abi and mtl_sampler_abi (keep the three in step).
#include <algorithm>
#include <cstring>

#include "core/impl.hpp"
#include "core/texture_binding.hpp"
#include "metalcall/errors.hpp"

namespace metalcall {

namespace {

// metal_texture.h's mtl_texture_abi and mtl_sampler_abi.
constexpr std::uint32_t kMaxMipLevels = 16;
struct TextureAbi {
  void* data;
  unsigned long long row_pitch, slice_pitch;
  unsigned width, height, depth, array_length, format, type, mip_levels, binding, sample_count, reserved;
  unsigned long long level_offset[kMaxMipLevels], level_row_pitch[kMaxMipLevels];
};
struct SamplerAbi {
  unsigned mag, min, mip, s, t, r, normalized, border;
  float lod_min, lod_max;
  unsigned compare;
};
static_assert(sizeof(TextureAbi) == 64 + 2 * 8 * kMaxMipLevels, "mtl_texture_abi layout");
static_assert(sizeof(SamplerAbi) == 44, "mtl_sampler_abi layout");

// Mip levels start on a cache line (rows within a level keep the device's row alignment).
constexpr std::size_t kLevelAlignment = 64;

std::size_t round_up(std::size_t n, std::size_t align) { return (n + align - 1) / align * align; }

std::uint32_t halved(std::uint32_t n, std::uint32_t level) { return std::max<std::uint32_t>(1, n >> level); }

// metal_texture_sampling.h's format code: channels | bytes per channel << 4 | kind << 8 | layout << 12 | sRGB << 16.
unsigned format_code(const PixelFormat& f) {
  return static_cast<unsigned>(f.channels) | static_cast<unsigned>(f.bits / 8) << 4 | static_cast<unsigned>(f.kind) << 8 |
         static_cast<unsigned>(f.layout) << 12 | (f.srgb ? 1u : 0u) << 16;
}

bool integer_kind(PixelKind k) { return k == PixelKind::uint || k == PixelKind::sint; }

std::string describe(const KernelInfo& k, const ParamInfo& p, const char* what) {
  return "kernel '" + k.name + "' " + what + "(" + std::to_string(p.binding) + ") '" + p.name + "' (" + p.type_name + ")";
}

// What a kernel reads for texture `t` at [[texture(index)]] (metal_texture_types.h's mtl_texture_abi).
TextureAbi texture_abi(const Texture& t, unsigned index) {
  const TextureDescriptor& d = t.descriptor();
  // array_length: the 2-D images a kernel indexes (a cube array's faces, a multisampled texture's samples).
  TextureAbi abi{t.storage().data(), t.row_pitch(), t.slice_pitch(), d.width, d.height, d.depth,
                 d.type == TextureType::texture3d ? 1u : t.slices(), format_code(d.format), static_cast<unsigned>(d.type),
                 t.mip_levels(), index, d.sample_count, 0, {}, {}};
  for (std::uint32_t i = 0; i < t.mip_levels(); ++i) {
    abi.level_offset[i] = t.mip_level(i).offset;
    abi.level_row_pitch[i] = t.mip_level(i).row_pitch;
  }
  return abi;
}

// ArgumentError unless texture `t` fits parameter `p` (`what` names them): type, element type,
// usage and device, as Metal's validation checks them.
void check_bound_texture(const std::string& what, const ParamInfo& param, const Texture& t, const DeviceInfo& dev) {
  const ParamInfo* p = &param;
  const TextureDescriptor& d = t.descriptor();
  if (p->texture_type != TextureType::none && d.type != p->texture_type) {
    throw ArgumentError(what + ": the Texture is a " + to_string(d.type) + ", the kernel takes a " +
                        to_string(p->texture_type));
  }
  const bool int_texture = integer_kind(d.format.kind);
  const bool int_param = p->scalar != ScalarType::f32 && p->scalar != ScalarType::f16;
  const bool element_known = p->scalar != ScalarType::unknown;
  if (element_known && int_texture != int_param) {
    throw ArgumentError(what + ": the Texture's format " + d.format.name() + " holds " +
                        (int_texture ? "integers" : "floating-point or normalized values") +
                        ", the kernel's element type " + to_string(p->scalar) + " does not match (Metal: float or half "
                        "for unorm/snorm/float formats, int/uint/short/ushort for sint/uint ones)");
  }
  if (element_known && int_texture &&
      ((d.format.kind == PixelKind::sint) != (p->scalar == ScalarType::i32 || p->scalar == ScalarType::i16))) {
    throw ArgumentError(what + ": format " + d.format.name() + " needs a " +
                        (d.format.kind == PixelKind::sint ? "signed (int, short)" : "unsigned (uint, ushort)") +
                        " element type");
  }
  const bool writes = p->texture_access == TextureAccess::write || p->texture_access == TextureAccess::read_write;
  if (writes && !(d.usage & usage_write))
    throw ArgumentError(what + " writes the texture, whose usage does not include \"write\"");
  if (!writes && !(d.usage & usage_read))
    throw ArgumentError(what + " reads the texture, whose usage does not include \"read\"");
  const auto* home = t.storage().storage()->home();
  if (home && home != &dev && !(home->backend == dev.backend && home->index == dev.index)) {
    throw ArgumentError(what + ": the Texture lives on " + home->backend + ":" + std::to_string(home->index) +
                        " but the kernel runs on " + dev.backend + ":" + std::to_string(dev.index));
  }
}

}  // namespace

Texture Device::texture(const TextureDescriptor& descriptor) const {
  TextureDescriptor d = descriptor;
  if (d.width == 0 || d.height == 0 || d.depth == 0 || d.array_length == 0)
    throw ArgumentError("a texture needs at least one texel in every dimension");
  const TextureType type = d.type;
  switch (type) {
    case TextureType::texture1d: d.height = d.depth = d.array_length = 1; break;
    case TextureType::texture1d_array: d.height = d.depth = 1; break;
    case TextureType::texture_buffer: d.height = d.depth = d.array_length = 1; break;
    case TextureType::texture3d: d.array_length = 1; break;
    case TextureType::texturecube:
    case TextureType::depthcube: d.depth = 1, d.array_length = 6; break;
    case TextureType::none: throw ArgumentError("a texture needs a type");
    default:
      d.depth = 1;
      if (!is_array(type)) d.array_length = 1;
  }
  if (is_cube(type) && d.width != d.height)
    throw ArgumentError("a cube texture's faces are square: width and height must be equal");
  if (is_depth(type) && !(d.format == PixelFormat{1, 32, PixelKind::float_}))
    throw ArgumentError("a " + std::string(to_string(type)) + " texture must have format r32float (Metal's depth32Float)");
  if (is_multisample(type)) {
    if (d.sample_count != 1 && d.sample_count != 2 && d.sample_count != 4 && d.sample_count != 8)
      throw ArgumentError("a multisampled texture has 1, 2, 4 or 8 samples per texel, got " + std::to_string(d.sample_count));
    if (d.mip_levels != 1) throw ArgumentError("a multisampled texture has 1 mip level (Metal has no multisampled mipmaps)");
  } else if (d.sample_count != 1) {
    throw ArgumentError("sample_count is for the multisampled types (texture2d_ms, texture2d_ms_array, depth2d_ms, "
                        "depth2d_ms_array); a " + std::string(to_string(type)) + " has 1 sample per texel");
  }
  const std::uint32_t full = full_mip_levels(d);
  if (d.mip_levels == 0) throw ArgumentError("a texture has at least 1 mip level (level 0, the image itself)");
  if (d.mip_levels > 1 && (d.type == TextureType::texture1d || d.type == TextureType::texture1d_array ||
                           d.type == TextureType::texture_buffer))
    throw ArgumentError("a " + std::string(to_string(d.type)) + " has 1 mip level: MSL has no mipmapped 1-D textures");
  if (d.mip_levels > std::min(full, kMaxMipLevels)) {
    throw ArgumentError("a " + std::string(to_string(d.type)) + " of " + std::to_string(d.width) + "x" +
                        std::to_string(d.height) + (d.type == TextureType::texture3d ? "x" + std::to_string(d.depth) : "") +
                        " has at most " + std::to_string(std::min(full, kMaxMipLevels)) +
                        " mip levels (halving its largest size down to 1), got " + std::to_string(d.mip_levels));
  }
  impl_->backend().check_texture(d);
  const std::size_t align = std::max<std::size_t>(1, impl_->backend().texture_row_alignment(d.format));
  std::vector<MipLevel> levels(d.mip_levels);
  std::size_t end = 0;
  const Texture shape(Buffer(), d, {});  // its slices per level
  for (std::uint32_t i = 0; i < d.mip_levels; ++i) {
    MipLevel& l = levels[i];
    l.width = halved(d.width, i), l.height = halved(d.height, i), l.depth = halved(d.depth, i);
    l.offset = round_up(end, kLevelAlignment);
    l.row_pitch = round_up(static_cast<std::size_t>(l.width) * d.format.bytes_per_pixel(), align);
    l.slice_pitch = l.row_pitch * l.height;
    end = l.offset + l.slice_pitch * shape.slices(i);
  }
  Buffer storage = allocate(end);
  if (storage.host_visible()) std::memset(storage.data(), 0, storage.nbytes());
  return Texture(std::move(storage), d, std::move(levels));
}

void bind_textures(const KernelInfo& k, const LaunchShape& shape, bool borrow, const DeviceInfo& dev,
                   DispatchCommand& command) {
  const auto texture_params = k.texture_params();
  const auto sampler_params = k.sampler_params();
  // Entries past the kernel's highest index are a mistake (an index between two the kernel
  // uses is left alone: Metal's tables may have holes).
  auto check_extra = [&](std::size_t given, const std::vector<const ParamInfo*>& params, const char* what,
                         auto&& is_set) {
    std::size_t used = 0;
    for (const ParamInfo* p : params)
      used = std::max(used, static_cast<std::size_t>(p->binding + std::max(1, p->texture_count)));
    for (std::size_t i = used; i < given; ++i) {
      if (!is_set(i)) continue;
      throw ArgumentError("kernel '" + k.name + "' has no [[" + what + "(" + std::to_string(i) + ")]] parameter, but " +
                          what + "s[" + std::to_string(i) + "] was given");
    }
  };
  check_extra(shape.textures.size(), texture_params, "texture",
              [&](std::size_t i) { return static_cast<bool>(shape.textures[i]); });
  check_extra(shape.samplers.size(), sampler_params, "sampler", [](std::size_t) { return true; });
  // A parameter a false [[function_constant]] leaves out takes no entry (None) and binds a
  // zeroed descriptor (Metal binds nothing); an entry for it would go unused: an error.
  auto absent = [&](const ParamInfo* p, bool given, const char* what, std::size_t abi_size) {
    if (p->enabled) return false;
    if (given) {
      throw ArgumentError(describe(k, *p, what) + " does not exist in this specialisation: its function constant '" +
                          p->function_constant + "' is false (or not given), so the kernel would ignore it; pass None "
                          "at index " + std::to_string(p->binding) + ", or set constants={'" + p->function_constant +
                          "': True} to use it");
    }
    BoundArgument& out = command.args[p->position];
    out.kind = p->kind;
    out.absent = true;
    out.bytes.assign(abi_size, 0);
    return true;
  };
  for (const ParamInfo* p : texture_params) {
    // `array<texture2d<T>, N>` takes textures[binding] .. textures[binding + N - 1], as Metal binds it.
    const std::size_t count = static_cast<std::size_t>(std::max(1, p->texture_count));
    auto given_at = [&](std::size_t i) -> const Texture* {
      const std::size_t index = static_cast<std::size_t>(p->binding) + i;
      return p->binding >= 0 && index < shape.textures.size() && shape.textures[index] ? &shape.textures[index] : nullptr;
    };
    bool given = false;
    for (std::size_t i = 0; i < count; ++i) given = given || given_at(i);
    if (absent(p, given, "texture", sizeof(TextureAbi) * count)) continue;
    BoundArgument& out = command.args[p->position];
    out.kind = ParamKind::texture;
    out.written = p->texture_access == TextureAccess::write || p->texture_access == TextureAccess::read_write;
    out.bytes.assign(sizeof(TextureAbi) * count, 0);
    for (std::size_t i = 0; i < count; ++i) {
      const unsigned index = static_cast<unsigned>(p->binding) + static_cast<unsigned>(i);
      const std::string what = describe(k, *p, "texture") +
                               (p->texture_count > 0 ? " element " + std::to_string(i) + " (texture(" + std::to_string(index) + "))" : "");
      const Texture* t = given_at(i);
      if (!t && p->texture_count > 0) {
        throw ArgumentError(what + " needs a texture: an array of " + std::to_string(count) + " textures takes textures[" +
                            std::to_string(p->binding) + "] to textures[" + std::to_string(p->binding + count - 1) +
                            "], one Texture each, as Metal binds it");
      }
      if (!t) {
        throw ArgumentError(what + " needs a texture: pass textures=[...] with a Texture at index " +
                            std::to_string(p->binding));
      }
      check_bound_texture(what, *p, *t, dev);
      auto storage = borrow ? std::shared_ptr<BufferStorage>(std::shared_ptr<BufferStorage>(), t->storage().storage().get())
                            : t->storage().storage();
      if (i == 0) {
        out.buffer = std::move(storage);
        out.texture = *t;
      } else {
        out.more_buffers.push_back(std::move(storage));
        out.more_textures.push_back(*t);
      }
      const TextureAbi abi = texture_abi(*t, index);
      std::memcpy(out.bytes.data() + i * sizeof abi, &abi, sizeof abi);
    }
  }
  for (const ParamInfo* p : sampler_params) {
    const bool given = p->binding >= 0 && static_cast<std::size_t>(p->binding) < shape.samplers.size();
    if (absent(p, given, "sampler", sizeof(SamplerAbi))) continue;
    if (p->binding < 0 || static_cast<std::size_t>(p->binding) >= shape.samplers.size()) {
      throw ArgumentError(describe(k, *p, "sampler") + " needs a sampler: pass samplers=[...] with a Sampler at index " +
                          std::to_string(p->binding));
    }
    const Sampler& s = shape.samplers[p->binding];
    BoundArgument& out = command.args[p->position];
    out.kind = ParamKind::sampler;
    out.sampler = s;
    SamplerAbi abi{static_cast<unsigned>(s.mag_filter), static_cast<unsigned>(s.min_filter),
                   static_cast<unsigned>(s.mip_filter), static_cast<unsigned>(s.s_address),
                   static_cast<unsigned>(s.t_address), static_cast<unsigned>(s.r_address),
                   s.normalized_coordinates ? 1u : 0u, static_cast<unsigned>(s.border_color),
                   s.lod_min_clamp, s.lod_max_clamp, static_cast<unsigned>(s.compare_func)};
    out.bytes.resize(sizeof abi);
    std::memcpy(out.bytes.data(), &abi, sizeof abi);
  }
}

void own_textures(DispatchCommand& command) {
  for (auto& a : command.args) {
    if (a.kind != ParamKind::texture || !a.texture) continue;
    a.buffer = a.texture.storage().storage();
    for (std::size_t i = 0; i < a.more_textures.size(); ++i) a.more_buffers[i] = a.more_textures[i].storage().storage();
  }
}

}  // namespace metalcall
