// What Metal allows of buffers and textures, as plain C++ both Metal drivers share: the
// Objective-C++ one (backends/metal) and the simulator (backends/metal_sim).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <string>

#include "metalcall/argument.hpp"

namespace metalcall::metal {

inline std::size_t round_up(std::size_t value, std::size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

// Metal documents setBytes:length:atIndex: for data up to 4 KB; larger goes in a buffer.
constexpr std::size_t kMaxInlineBytes = 4096;
// Length of the buffer bound where Metal wants one and a call has no bytes.
constexpr std::size_t kEmptyBufferLength = 16;
// setBuffer:offset:atIndex: on macOS: a buffer in the constant address space is bound at a
// multiple of 256 bytes; one in the device address space at a multiple of its data type's alignment.
constexpr std::size_t kConstantOffsetAlignment = 256;
// setThreadgroupMemoryLength:atIndex: takes multiples of 16 bytes.
constexpr std::size_t kThreadgroupMemoryGranule = 16;
// copyFromBuffer:sourceOffset:toBuffer:destinationOffset:size: in macOS: both offsets and the size
// are multiples of 4 bytes (any value in iOS). So the buffers such blits read or write have
// lengths that are multiples of 4 too (storage_length), and a blit never shifts bytes by 1 to 3.
constexpr std::size_t kBufferCopyGranule = 4;

/** The length of the MTLBuffer behind `nbytes` of a Buffer: at least 1 byte (Metal has no empty
 * buffers), rounded up to whole kBufferCopyGranule so that a blit of its last bytes is a legal size. */
inline std::size_t storage_length(std::size_t nbytes) {
  return round_up(nbytes ? nbytes : 1, kBufferCopyGranule);
}

/**
 * Length to wrap host memory without a copy (newBufferWithBytesNoCopy needs a
 * page-aligned pointer and a whole number of pages), or 0 to copy instead. The length
 * is rounded up only when the allocation behind the pointer (`backing_bytes`, what
 * malloc_size says; 0 when unknown) really covers the rounded length.
 */
std::size_t no_copy_length(const void* data, std::size_t nbytes, std::size_t page_size, std::size_t backing_bytes);

/**
 * Whether Metal makes `descriptor`'s texture over its buffer (a linear texture: 2-D, one mip
 * level), so that kernels use the texels where the host sees them. Every other texture is
 * staged: each call that binds it gets an MTLTexture of its own, filled from the buffer
 * before the call's dispatch and copied back after it where the kernel may write.
 */
bool texture_over_buffer(const TextureDescriptor& descriptor);
/** ArgumentError for a texture beyond Metal's size limits (16384 texels across, 3-D 2048, 2048 slices). */
void check_metal_texture(const TextureDescriptor& descriptor);

/** What a GPU allows of the sRGB and packed pixel formats (Apple's feature set tables, "GPU texture
 * capabilities by pixel format"); rgb10a2 and rg11b10float are writable on every GPU Metal runs. */
struct PixelFormatSupport {
  bool small_srgb = true;     // r8unorm_srgb, rg8unorm_srgb exist: Apple GPUs (Apple1 and later), not Intel/AMD Macs
  bool srgb_writes = true;    // kernels write sRGB formats: Apple2 and later, not Mac2 alone
  bool rgb9e5_writes = true;  // kernels write rgb9e5float: Apple3 and later, not Mac2 alone
};
/** ArgumentError (`[metal]` + `gpu`) for a format the GPU lacks, or write usage it does not allow. */
void check_metal_pixel_format(const TextureDescriptor& descriptor, const PixelFormatSupport& support,
                              const std::string& gpu);
/**
 * ArgumentError for a sampler Metal leaves undefined: with unnormalised coordinates Apple
 * allows only clamp_to_edge or clamp_to_zero addressing, no mip filter, equal min and mag
 * filters (and an anisotropy of 1, which metalcall's samplers always have), and 1-D or 2-D
 * textures (`bound_to`, the texture type it samples).
 */
void check_metal_sampler(const Sampler& sampler, TextureType bound_to, const std::string& what);

/** One blit between a staged texture and its buffer: one 2-D image (a level of a 1-D or 2-D
 * texture, a slice of an array, a cube face) or a 3-D texture's whole level. */
struct ImageCopy {
  std::uint32_t slice = 0, level = 0;
  std::size_t offset = 0, bytes_per_row = 0;
  std::size_t bytes_per_image = 0;  // Apple: the step between a 3-D copy's images, 0 when it copies one
  std::uint32_t width = 1, height = 1, depth = 1;
};
/** The blits that copy every level and slice of a staged texture laid out as `levels` says. */
std::vector<ImageCopy> staged_image_copies(const TextureDescriptor& descriptor, const std::vector<MipLevel>& levels);

}  // namespace metalcall::metal
