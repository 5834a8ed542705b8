// What Metal allows of buffers, textures and samplers (metal_resources.hpp).
#include "backends/metal_plan/metal_resources.hpp"

#include <algorithm>
#include <string>

#include "metalcall/errors.hpp"

namespace metalcall::metal {

std::size_t no_copy_length(const void* data, std::size_t nbytes, std::size_t page_size, std::size_t backing_bytes) {
  if (nbytes == 0 || page_size == 0) return 0;
  if (reinterpret_cast<std::uintptr_t>(data) % page_size != 0) return 0;
  const std::size_t rounded = round_up(nbytes, page_size);
  if (rounded == nbytes) return nbytes;
  return backing_bytes >= rounded ? rounded : 0;
}

bool texture_over_buffer(const TextureDescriptor& descriptor) {
  // A texture_buffer is always one: Metal makes it from a buffer alone.
  return (descriptor.type == TextureType::texture2d && descriptor.mip_levels == 1) ||
         descriptor.type == TextureType::texture_buffer;
}

void check_metal_texture(const TextureDescriptor& d) {
  // Metal fills a multisampled texture only by rendering to it: neither blits from a buffer nor
  // textures over one take it (and compute kernels only read it), so memory cannot reach it.
  if (is_multisample(d.type))
    throw ArgumentError("[metal] a " + std::string(to_string(d.type)) + " cannot be filled from memory on Metal (only a "
                        "render pass writes multisampled textures; blits and compute kernels cannot): the CPU and CUDA "
                        "devices run kernels that read them");
  // Metal's implementation limits (feature set tables, Apple3 and later, Mac2): 16384 texels
  // across a 1-D, 2-D or cube texture; 2048 in each dimension of a 3-D texture and slices of an array.
  const bool volume = d.type == TextureType::texture3d;
  const std::uint32_t most = volume ? 2048 : 16384;
  const std::uint32_t largest = std::max({d.width, d.height, volume ? d.depth : 1u});
  // A texture buffer's width is bounded by its buffer (maxBufferLength), not by these.
  if (largest > most && d.type != TextureType::texture_buffer)
    throw ArgumentError("[metal] a " + std::string(to_string(d.type)) + " is at most " + std::to_string(most) +
                        " texels wide in each dimension on Metal, got " + std::to_string(largest));
  if (is_array(d.type) && d.array_length > 2048)
    throw ArgumentError("[metal] a " + std::string(to_string(d.type)) + " has at most 2048 slices (array elements) on Metal, got " +
                        std::to_string(d.array_length));
}

void check_metal_pixel_format(const TextureDescriptor& d, const PixelFormatSupport& support, const std::string& gpu) {
  const PixelFormat& f = d.format;
  const std::string name = f.name();
  if (f.srgb && f.layout == PixelLayout::plain && f.channels < 4 && !support.small_srgb)
    throw ArgumentError("[metal] " + gpu + " has no " + name + " (Metal's R8Unorm_sRGB and RG8Unorm_sRGB are Apple GPUs' "
                        "alone): use rgba8unorm_srgb");
  const bool writable = f.srgb ? support.srgb_writes : f.layout == PixelLayout::rgb9e5 ? support.rgb9e5_writes : true;
  if ((d.usage & usage_write) && !writable)
    throw ArgumentError("[metal] " + gpu + " GPUs do not let kernels write " + name + " textures (Metal's feature set "
                        "tables: " + (f.srgb ? "sRGB writes need an Apple GPU" : "rgb9e5 writes need Apple3 or later") +
                        "); make it with usage=\"read\"");
}

void check_metal_sampler(const Sampler& s, TextureType bound_to, const std::string& what) {
  if (s.normalized_coordinates) return;
  // Apple (MTLSamplerDescriptor.normalizedCoordinates): sampling with pixel coordinates is
  // undefined unless every one of these holds.
  std::string broken;
  auto clamps = [](SamplerAddress a) { return a == SamplerAddress::clamp_to_edge || a == SamplerAddress::clamp_to_zero; };
  if (!clamps(s.s_address) || !clamps(s.t_address) || !clamps(s.r_address))
    broken = "its address modes must be clamp_to_edge or clamp_to_zero";
  else if (s.mip_filter != SamplerMipFilter::none)
    broken = "it must not filter between mip levels (mip_filter 'none')";
  else if (s.min_filter != s.mag_filter)
    broken = "its min and mag filters must be equal";
  else if (bound_to != TextureType::none && bound_to != TextureType::texture1d && bound_to != TextureType::texture2d &&
           bound_to != TextureType::depth2d)
    broken = std::string("it may sample only 1-D and 2-D textures, and the call binds a ") + to_string(bound_to);
  if (!broken.empty())
    throw ArgumentError(what + " uses unnormalised coordinates, which Metal defines only where " + broken +
                        ": change the sampler, or use normalized_coordinates=True");
}

std::vector<ImageCopy> staged_image_copies(const TextureDescriptor& d, const std::vector<MipLevel>& levels) {
  const bool volume = d.type == TextureType::texture3d;
  // 1 for 1-D and 2-D, 6 for a cube (array_length 6), 6 per cube of a cube array, else the elements.
  const bool cube_array = d.type == TextureType::texturecube_array || d.type == TextureType::depthcube_array;
  const std::uint32_t images = volume ? 1 : cube_array ? 6 * d.array_length : d.array_length;
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
