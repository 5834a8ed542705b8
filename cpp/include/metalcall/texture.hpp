// Texture and Sampler: image resources bound to a kernel's [[texture(i)]] and
// [[sampler(i)]] parameters. A Texture's texels live in a Buffer, rows row_pitch()
// bytes apart, so the host reads and writes them in place like any Buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "metalcall/buffer.hpp"
#include "metalcall/reflection.hpp"

namespace metalcall {

/** How a channel's bits are read: Metal's pixel-format suffixes. */
enum class PixelKind { unorm, snorm, uint, sint, float_ };

/** Where a format's channels lie in a texel: one field per channel in RGBA order (plain), Metal's
 * BGRA byte order, or one of its packed 32-bit layouts (red in the lowest bits). */
enum class PixelLayout { plain = 0, bgra = 1, rgb10a2 = 2, rg11b10 = 3, rgb9e5 = 4 };

/** An uncompressed Metal pixel format: r/rg/rgba × 8/16/32 bits × unorm/snorm/uint/sint/float, the
 * sRGB forms (r8, rg8, rgba8, bgra8 unorm_srgb), bgra8unorm, and the packed rgb10a2unorm/uint,
 * rg11b10float, rgb9e5float. A packed format is described as its host view shows it: one 32-bit
 * channel (channels 1, bits 32) whose word holds the components; kind says what a kernel reads. */
struct PixelFormat {
  int channels = 4;  // 1 (r), 2 (rg) or 4 (rgba, bgra); 1 for the packed formats (one word)
  int bits = 8;      // per channel: 8, 16 or 32
  PixelKind kind = PixelKind::unorm;
  PixelLayout layout = PixelLayout::plain;
  bool srgb = false;  // r, g, b are sRGB-encoded unorm8: reads linearise, writes encode

  /** Metal's name without the MTLPixelFormat prefix, lower case: "rgba8unorm", "r32float", "bgra8unorm_srgb". */
  std::string name() const;
  std::size_t bytes_per_pixel() const { return static_cast<std::size_t>(channels * bits / 8); }
  bool packed() const { return layout >= PixelLayout::rgb10a2; }
  /** Whether the format stores alpha (the others read 1, and clamp_to_zero's border is opaque). */
  bool has_alpha() const { return layout == PixelLayout::rgb10a2 || (!packed() && channels == 4); }
  /** Parses a name as name() writes it; ArgumentError for formats Metal does not have. */
  static PixelFormat parse(const std::string& name);
  bool operator==(const PixelFormat& o) const {
    return channels == o.channels && bits == o.bits && kind == o.kind && layout == o.layout && srgb == o.srgb;
  }
};

/** Every format PixelFormat::parse takes, in Metal's order. */
const std::vector<PixelFormat>& pixel_formats();

/** What kernels may do with a texture (MTLTextureUsage). */
enum TextureUsage : unsigned { usage_read = 1, usage_write = 2 };

struct TextureDescriptor {
  TextureType type = TextureType::texture2d;
  PixelFormat format;
  std::uint32_t width = 1, height = 1, depth = 1;
  // texture2d_array, depth2d_array, *_ms_array: slices; texturecube / depthcube: 6 (set by the
  // device); texturecube_array / depthcube_array: cubes (Metal's arrayLength; 6 slices each).
  std::uint32_t array_length = 1;
  /** Samples per texel: 1, or 2, 4, 8 for the multisampled types (texture2d_ms, depth2d_ms...). */
  std::uint32_t sample_count = 1;
  unsigned usage = usage_read | usage_write;
  /** Mip levels: 1 (the image alone) up to full_mip_levels(); not for texture1d (MSL has no 1-D mipmaps). */
  std::uint32_t mip_levels = 1;
};

/** Levels of a full mip chain down to 1x1(x1): floor(log2(largest dimension)) + 1. */
std::uint32_t full_mip_levels(const TextureDescriptor& descriptor);

/** Where one mip level lies in a texture's storage, and its size. */
struct MipLevel {
  std::size_t offset = 0;       // bytes from the storage's start to texel (0, 0) of slice 0
  std::size_t row_pitch = 0;    // bytes from one row to the next
  std::size_t slice_pitch = 0;  // bytes from one 2-D image to the next
  std::uint32_t width = 1, height = 1, depth = 1;
};

/** A texture's storage: a Buffer of slices() 2-D images, rows row_pitch() bytes apart; mip
 * levels after level 0, one after another, each with its own pitches (mip_level()). */
class Texture {
 public:
  Texture() = default;
  Texture(Buffer storage, TextureDescriptor descriptor, std::vector<MipLevel> levels)
      : storage_(std::move(storage)), descriptor_(descriptor), levels_(std::move(levels)) {}

  const TextureDescriptor& descriptor() const { return descriptor_; }
  const Buffer& storage() const { return storage_; }
  /** Bytes from one row to the next (>= width * bytes per pixel; larger where the device needs aligned rows). */
  std::size_t row_pitch() const { return levels_.empty() ? 0 : levels_[0].row_pitch; }
  /** Bytes from one 2-D image (depth slice, array element, cube face) to the next. */
  std::size_t slice_pitch() const { return levels_.empty() ? 0 : levels_[0].slice_pitch; }
  /** 2-D images in level 0: depth, array length, 6 faces (per cube), or samples (per array element);
   *  a multisampled texture keeps sample s of element e in image e * sample_count + s. */
  std::uint32_t slices() const { return slices(0); }
  /** 2-D images in mip level `level` (a 3-D texture's depth halves with each level). */
  std::uint32_t slices(std::uint32_t level) const;
  std::uint32_t mip_levels() const { return static_cast<std::uint32_t>(levels_.size()); }
  /** Level `level` (< mip_levels()); ArgumentError past the last. */
  const MipLevel& mip_level(std::uint32_t level) const;
  explicit operator bool() const { return static_cast<bool>(storage_); }

 private:
  Buffer storage_;
  TextureDescriptor descriptor_;
  std::vector<MipLevel> levels_;
};

enum class SamplerFilter { nearest = 0, linear = 1 };
/** Between mip levels: none samples level 0 (MSL's mip_filter::none). */
enum class SamplerMipFilter { none = 0, nearest = 1, linear = 2 };
/** Numbered as MTLSamplerAddressMode. */
enum class SamplerAddress {
  clamp_to_edge = 0, mirrored_clamp_to_edge = 1, repeat = 2, mirrored_repeat = 3, clamp_to_zero = 4,
  clamp_to_border = 5,
};
enum class SamplerBorder { transparent_black = 0, opaque_black = 1, opaque_white = 2 };
/** sample_compare's test, reference OP texel; numbered as MSL's compare_func (none = 0). */
enum class SamplerCompare { none = 0, less, less_equal, greater, greater_equal, equal, not_equal, always, never };

/** A sampler state: how sample() and gather() filter and address. A plain value. */
struct Sampler {
  SamplerFilter mag_filter = SamplerFilter::nearest, min_filter = SamplerFilter::nearest;
  SamplerAddress s_address = SamplerAddress::clamp_to_edge, t_address = SamplerAddress::clamp_to_edge,
                 r_address = SamplerAddress::clamp_to_edge;
  bool normalized_coordinates = true;
  SamplerBorder border_color = SamplerBorder::transparent_black;
  SamplerMipFilter mip_filter = SamplerMipFilter::none;
  float lod_min_clamp = 0.0f, lod_max_clamp = 3.402823466e+38f;  // MTLSamplerDescriptor's defaults
  SamplerCompare compare_func = SamplerCompare::none;
};

const char* to_string(SamplerFilter);
const char* to_string(SamplerAddress);
const char* to_string(SamplerMipFilter);
const char* to_string(SamplerCompare);
/** ArgumentError for unknown names. */
SamplerFilter sampler_filter_from_name(const std::string& name);
SamplerAddress sampler_address_from_name(const std::string& name);
SamplerMipFilter sampler_mip_filter_from_name(const std::string& name);
SamplerCompare sampler_compare_from_name(const std::string& name);

}  // namespace metalcall
