// Textures and samplers on Metal. A single-level 2-D texture is a linear MTLTexture made
// over its Texture's shared MTLBuffer (the host sees the texels in place, rows row_pitch
// apart). Metal makes no other texture over a buffer, so the others are staged: each call
// gets a private MTLTexture of the type, filled from the buffer by a blit pass before the
// dispatch and, where the kernel may write, copied back by one after it; the buffer stays
// what the host reads and writes. Samplers: an MTLSamplerState per bound Sampler.
#if !__has_feature(objc_arc)
#error "metal_texture.mm needs ARC: compile it with -fobjc-arc (metal.cmake sets it)"
#endif

#include <Foundation/Foundation.h>
#include <Metal/Metal.h>

#include <string>
#include <vector>

#include "backends/metal/metal_backend.hpp"
#include "metalcall/errors.hpp"

namespace metalcall::metal {

namespace {

// The MTLPixelFormat of each format metalcall names (PixelFormat::name() spells Metal's name in lower case).
MTLPixelFormat pixel_format(const PixelFormat& f) {
  const PixelKind k = f.kind;
  if (f.channels == 1) {
    if (f.bits == 8) return k == PixelKind::unorm ? MTLPixelFormatR8Unorm : k == PixelKind::snorm ? MTLPixelFormatR8Snorm
                          : k == PixelKind::uint ? MTLPixelFormatR8Uint : MTLPixelFormatR8Sint;
    if (f.bits == 16) return k == PixelKind::unorm ? MTLPixelFormatR16Unorm : k == PixelKind::snorm ? MTLPixelFormatR16Snorm
                           : k == PixelKind::uint ? MTLPixelFormatR16Uint : k == PixelKind::sint ? MTLPixelFormatR16Sint
                           : MTLPixelFormatR16Float;
    return k == PixelKind::uint ? MTLPixelFormatR32Uint : k == PixelKind::sint ? MTLPixelFormatR32Sint : MTLPixelFormatR32Float;
  }
  if (f.channels == 2) {
    if (f.bits == 8) return k == PixelKind::unorm ? MTLPixelFormatRG8Unorm : k == PixelKind::snorm ? MTLPixelFormatRG8Snorm
                          : k == PixelKind::uint ? MTLPixelFormatRG8Uint : MTLPixelFormatRG8Sint;
    if (f.bits == 16) return k == PixelKind::unorm ? MTLPixelFormatRG16Unorm : k == PixelKind::snorm ? MTLPixelFormatRG16Snorm
                           : k == PixelKind::uint ? MTLPixelFormatRG16Uint : k == PixelKind::sint ? MTLPixelFormatRG16Sint
                           : MTLPixelFormatRG16Float;
    return k == PixelKind::uint ? MTLPixelFormatRG32Uint : k == PixelKind::sint ? MTLPixelFormatRG32Sint : MTLPixelFormatRG32Float;
  }
  if (f.bits == 8) return k == PixelKind::unorm ? MTLPixelFormatRGBA8Unorm : k == PixelKind::snorm ? MTLPixelFormatRGBA8Snorm
                        : k == PixelKind::uint ? MTLPixelFormatRGBA8Uint : MTLPixelFormatRGBA8Sint;
  if (f.bits == 16) return k == PixelKind::unorm ? MTLPixelFormatRGBA16Unorm : k == PixelKind::snorm ? MTLPixelFormatRGBA16Snorm
                         : k == PixelKind::uint ? MTLPixelFormatRGBA16Uint : k == PixelKind::sint ? MTLPixelFormatRGBA16Sint
                         : MTLPixelFormatRGBA16Float;
  return k == PixelKind::uint ? MTLPixelFormatRGBA32Uint : k == PixelKind::sint ? MTLPixelFormatRGBA32Sint
                                                                                : MTLPixelFormatRGBA32Float;
}

MTLTextureType texture_type(TextureType t) {
  switch (t) {
    case TextureType::texture1d: return MTLTextureType1D;
    case TextureType::texture3d: return MTLTextureType3D;
    case TextureType::texture2d_array: return MTLTextureType2DArray;
    case TextureType::texturecube: return MTLTextureTypeCube;
    case TextureType::texture2d:
    case TextureType::depth2d:
    case TextureType::none: break;
  }
  return MTLTextureType2D;
}

MTLTextureUsage texture_usage(const TextureDescriptor& d) {
  MTLTextureUsage usage = 0;
  if (d.usage & usage_read) usage |= MTLTextureUsageShaderRead;
  if (d.usage & usage_write) usage |= MTLTextureUsageShaderWrite;
  return usage;
}

// The texture's storage, checked to be a buffer of this device.
id<MTLBuffer> texture_buffer(const BoundArgument& arg, const ParamInfo& param, const KernelInfo& kernel,
                             std::uint64_t registry_id) {
  const auto* storage = dynamic_cast<const MetalBufferStorage*>(arg.buffer.get());
  if (!storage || storage->registry_id() != registry_id)
    throw ArgumentError("kernel '" + kernel.name + "' texture(" + std::to_string(param.binding) + ") '" + param.name +
                        "' is a texture of another device: make it on the device the kernel runs on");
  return (__bridge id<MTLBuffer>)storage->buffer();
}

// Every level of a staged texture, as metal_support.cpp plans the blits.
std::vector<ImageCopy> image_copies(const Texture& t) {
  std::vector<MipLevel> levels;
  for (std::uint32_t i = 0; i < t.mip_levels(); ++i) levels.push_back(t.mip_level(i));
  return staged_image_copies(t.descriptor(), levels);
}

MTLSamplerAddressMode address_mode(SamplerAddress a) {
  switch (a) {
    case SamplerAddress::clamp_to_edge: return MTLSamplerAddressModeClampToEdge;
    case SamplerAddress::mirrored_clamp_to_edge: return MTLSamplerAddressModeMirrorClampToEdge;
    case SamplerAddress::repeat: return MTLSamplerAddressModeRepeat;
    case SamplerAddress::mirrored_repeat: return MTLSamplerAddressModeMirrorRepeat;
    case SamplerAddress::clamp_to_zero: return MTLSamplerAddressModeClampToZero;
    case SamplerAddress::clamp_to_border: return MTLSamplerAddressModeClampToBorderColor;
  }
  return MTLSamplerAddressModeClampToEdge;
}

MTLSamplerMinMagFilter min_mag_filter(SamplerFilter f) {
  return f == SamplerFilter::linear ? MTLSamplerMinMagFilterLinear : MTLSamplerMinMagFilterNearest;
}

MTLSamplerMipFilter mip_filter(SamplerMipFilter f) {
  switch (f) {
    case SamplerMipFilter::nearest: return MTLSamplerMipFilterNearest;
    case SamplerMipFilter::linear: return MTLSamplerMipFilterLinear;
    case SamplerMipFilter::none: break;
  }
  return MTLSamplerMipFilterNotMipmapped;
}

MTLCompareFunction compare_function(SamplerCompare c) {
  switch (c) {
    case SamplerCompare::less: return MTLCompareFunctionLess;
    case SamplerCompare::less_equal: return MTLCompareFunctionLessEqual;
    case SamplerCompare::greater: return MTLCompareFunctionGreater;
    case SamplerCompare::greater_equal: return MTLCompareFunctionGreaterEqual;
    case SamplerCompare::equal: return MTLCompareFunctionEqual;
    case SamplerCompare::not_equal: return MTLCompareFunctionNotEqual;
    case SamplerCompare::always: return MTLCompareFunctionAlways;
    case SamplerCompare::none:
    case SamplerCompare::never: break;
  }
  return MTLCompareFunctionNever;
}

MTLSamplerBorderColor border_color(SamplerBorder b) {
  switch (b) {
    case SamplerBorder::opaque_black: return MTLSamplerBorderColorOpaqueBlack;
    case SamplerBorder::opaque_white: return MTLSamplerBorderColorOpaqueWhite;
    case SamplerBorder::transparent_black: break;
  }
  return MTLSamplerBorderColorTransparentBlack;
}

}  // namespace

std::size_t linear_texture_alignment(void* device, const PixelFormat& format) {
  std::size_t alignment = 1;
  with_autorelease_pool([&] {
    alignment = [(__bridge id<MTLDevice>)device minimumLinearTextureAlignmentForPixelFormat:pixel_format(format)];
  });
  return alignment;
}

StagedTextures::StagedTextures(void* device, std::uint64_t registry_id, const DispatchCommand& command,
                               const KernelInfo& kernel) {
  std::vector<std::size_t> first_binding;  // for each entry, the argument that names it first (for messages)
  for (std::size_t i = 0; i < command.args.size() && i < kernel.params.size(); ++i) {
    const BoundArgument& arg = command.args[i];
    const ParamInfo& param = kernel.params[i];
    if (arg.absent || arg.kind != ParamKind::texture || texture_over_buffer(arg.texture.descriptor())) continue;
    void* buffer = (__bridge void*)texture_buffer(arg, param, kernel, registry_id);
    const bool written = param.texture_access == TextureAccess::write || param.texture_access == TextureAccess::read_write;
    // A texture bound at several indices is one MTLTexture, as on Metal: writes through one
    // binding are in the texture the others see, and it is copied in and out once.
    std::size_t entry = 0;
    while (entry < staged_.size() && staged_[entry].buffer != buffer) ++entry;
    if (entry == staged_.size()) {
      staged_.push_back(Staged{arg.texture, buffer, nullptr, false});
      first_binding.push_back(i);
    }
    staged_[entry].write_back = staged_[entry].write_back || written;
    bound_.emplace_back(i, entry);
  }
  try {
    for (std::size_t entry = 0; entry < staged_.size(); ++entry)
      staged_[entry].texture = make_texture(device, staged_[entry], kernel.params[first_binding[entry]], kernel);
  } catch (...) {
    release();  // the destructor does not run for a constructor that throws
    throw;
  }
}

void* StagedTextures::make_texture(void* device, const Staged& staged, const ParamInfo& param, const KernelInfo& kernel) {
  const TextureDescriptor& d = staged.source.descriptor();
  MTLTextureDescriptor* descriptor = [MTLTextureDescriptor new];
  [descriptor setTextureType:texture_type(d.type)];
  [descriptor setPixelFormat:d.type == TextureType::depth2d ? MTLPixelFormatDepth32Float : pixel_format(d.format)];
  [descriptor setWidth:d.width];
  [descriptor setHeight:d.height];
  [descriptor setDepth:d.type == TextureType::texture3d ? d.depth : 1];
  // A cube texture is one cube (its 6 faces are slices); an array texture has array_length slices.
  [descriptor setArrayLength:d.type == TextureType::texture2d_array ? d.array_length : 1];
  [descriptor setMipmapLevelCount:staged.source.mip_levels()];
  [descriptor setStorageMode:MTLStorageModePrivate];  // only the blits and the kernel touch it
  // The usage this call needs, no more (core checked that the Texture's own usage allows it).
  [descriptor setUsage:MTLTextureUsageShaderRead | (staged.write_back ? MTLTextureUsageShaderWrite : 0)];
  id<MTLTexture> texture = [(__bridge id<MTLDevice>)device newTextureWithDescriptor:descriptor];
  if (!texture)
    throw Error("[metal] unable to make a " + std::string(to_string(d.type)) + " of format " + d.format.name() +
                " for kernel '" + kernel.name + "' texture(" + std::to_string(param.binding) +
                "): the GPU may be out of memory");
  return (__bridge_retained void*)texture;
}

StagedTextures::~StagedTextures() { release(); }

void StagedTextures::release() {
  for (Staged& s : staged_) {
    if (!s.texture) continue;  // not made: a constructor that threw before
    id<MTLTexture> released = (__bridge_transfer id<MTLTexture>)s.texture;
    (void)released;
    s.texture = nullptr;
  }
  staged_.clear();
}

void StagedTextures::encode_uploads(void* command_buffer) const {
  id<MTLBlitCommandEncoder> blit = [(__bridge id<MTLCommandBuffer>)command_buffer blitCommandEncoder];
  if (!blit) throw ExecutionError("[metal] unable to start a blit pass: the GPU may have been reset or removed");
  for (const Staged& s : staged_) {
    id<MTLBuffer> buffer = (__bridge id<MTLBuffer>)s.buffer;
    id<MTLTexture> texture = (__bridge id<MTLTexture>)s.texture;
    for (const ImageCopy& c : image_copies(s.source)) {
      [blit copyFromBuffer:buffer sourceOffset:c.offset sourceBytesPerRow:c.bytes_per_row
          sourceBytesPerImage:c.bytes_per_image sourceSize:MTLSize{c.width, c.height, c.depth} toTexture:texture
              destinationSlice:c.slice destinationLevel:c.level destinationOrigin:MTLOrigin{0, 0, 0}];
    }
  }
  [blit endEncoding];
}

void StagedTextures::encode_downloads(void* command_buffer) const {
  bool any = false;
  for (const Staged& s : staged_) any = any || s.write_back;
  if (!any) return;
  id<MTLBlitCommandEncoder> blit = [(__bridge id<MTLCommandBuffer>)command_buffer blitCommandEncoder];
  if (!blit) throw ExecutionError("[metal] unable to start a blit pass: the GPU may have been reset or removed");
  for (const Staged& s : staged_) {
    if (!s.write_back) continue;
    id<MTLBuffer> buffer = (__bridge id<MTLBuffer>)s.buffer;
    id<MTLTexture> texture = (__bridge id<MTLTexture>)s.texture;
    for (const ImageCopy& c : image_copies(s.source)) {
      [blit copyFromTexture:texture sourceSlice:c.slice sourceLevel:c.level sourceOrigin:MTLOrigin{0, 0, 0}
                 sourceSize:MTLSize{c.width, c.height, c.depth} toBuffer:buffer destinationOffset:c.offset
          destinationBytesPerRow:c.bytes_per_row destinationBytesPerImage:c.bytes_per_image];
    }
  }
  [blit endEncoding];
}

void* StagedTextures::texture(std::size_t arg) const {
  for (const auto& [bound_arg, entry] : bound_)
    if (bound_arg == arg) return staged_[entry].texture;
  return nullptr;
}

void bind_texture(void* encoder, const BoundArgument& arg, const ParamInfo& param, const KernelInfo& kernel,
                  std::uint64_t registry_id, void* staged) {
  id<MTLComputeCommandEncoder> compute = (__bridge id<MTLComputeCommandEncoder>)encoder;
  const auto index = static_cast<NSUInteger>(param.binding);
  if (staged) {
    [compute setTexture:(__bridge id<MTLTexture>)staged atIndex:index];
    return;
  }
  id<MTLBuffer> buffer = texture_buffer(arg, param, kernel, registry_id);
  const TextureDescriptor& d = arg.texture.descriptor();
  MTLTextureDescriptor* descriptor = [MTLTextureDescriptor new];
  [descriptor setTextureType:MTLTextureType2D];
  [descriptor setPixelFormat:pixel_format(d.format)];
  [descriptor setWidth:d.width];
  [descriptor setHeight:d.height];
  // A texture over a buffer must use the buffer's storage mode (metal_device.mm allocates shared buffers).
  [descriptor setStorageMode:MTLStorageModeShared];
  [descriptor setUsage:texture_usage(d)];
  // The command buffer retains the texture (the queue makes retaining command buffers) until it completes.
  id<MTLTexture> texture = [buffer newTextureWithDescriptor:descriptor offset:0 bytesPerRow:arg.texture.row_pitch()];
  if (!texture)
    throw Error("[metal] unable to make a " + d.format.name() + " texture of " + std::to_string(d.width) + "x" +
                std::to_string(d.height) + " over its buffer for kernel '" + kernel.name + "'");
  [compute setTexture:texture atIndex:index];
}

void bind_sampler(void* encoder, void* device, const BoundArgument& arg, const ParamInfo& param, const KernelInfo& kernel) {
  const Sampler& s = arg.sampler;
  MTLSamplerDescriptor* descriptor = [MTLSamplerDescriptor new];
  [descriptor setMinFilter:min_mag_filter(s.min_filter)];
  [descriptor setMagFilter:min_mag_filter(s.mag_filter)];
  [descriptor setSAddressMode:address_mode(s.s_address)];
  [descriptor setTAddressMode:address_mode(s.t_address)];
  [descriptor setRAddressMode:address_mode(s.r_address)];
  [descriptor setNormalizedCoordinates:s.normalized_coordinates ? YES : NO];
  [descriptor setBorderColor:border_color(s.border_color)];
  [descriptor setMipFilter:mip_filter(s.mip_filter)];
  [descriptor setLodMinClamp:s.lod_min_clamp];
  [descriptor setLodMaxClamp:s.lod_max_clamp];
  if (s.compare_func != SamplerCompare::none) [descriptor setCompareFunction:compare_function(s.compare_func)];
  id<MTLSamplerState> state = [(__bridge id<MTLDevice>)device newSamplerStateWithDescriptor:descriptor];
  if (!state)
    throw Error("[metal] unable to make the sampler state for kernel '" + kernel.name + "' sampler(" +
                std::to_string(param.binding) + ") '" + param.name + "'");
  [(__bridge id<MTLComputeCommandEncoder>)encoder setSamplerState:state atIndex:static_cast<NSUInteger>(param.binding)];
}

}  // namespace metalcall::metal
