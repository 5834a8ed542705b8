// Textures and samplers on Metal: a linear MTLTexture made over a Texture's shared
// MTLBuffer (so the host sees the texels in place, rows row_pitch apart) and an
// MTLSamplerState per bound Sampler. Only 2-D textures: Metal makes no other type over a buffer.
#if !__has_feature(objc_arc)
#error "metal_texture.mm needs ARC: compile it with -fobjc-arc (metal.cmake sets it)"
#endif

#include <Foundation/Foundation.h>
#include <Metal/Metal.h>

#include <string>

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

void check_metal_texture(const TextureDescriptor& descriptor) {
  if (descriptor.type != TextureType::texture2d)
    throw ArgumentError(std::string("[metal] ") + to_string(descriptor.type) +
                        " textures are not supported by the Metal backend yet: metalcall keeps a texture's texels in "
                        "a buffer the host reads in place, and Metal makes only 2-D textures over a buffer; use "
                        "texture2d, or mc.Device(\"cpu\")");
  if (descriptor.mip_levels > 1)
    throw ArgumentError("[metal] mipmapped textures are not supported by the Metal backend yet: metalcall keeps a "
                        "texture's texels in a buffer the host reads in place, and a texture over a buffer has one "
                        "mip level; use mip_levels=1, or mc.Device(\"cpu\")");
}

std::size_t linear_texture_alignment(void* device, const PixelFormat& format) {
  std::size_t alignment = 1;
  with_autorelease_pool([&] {
    alignment = [(__bridge id<MTLDevice>)device minimumLinearTextureAlignmentForPixelFormat:pixel_format(format)];
  });
  return alignment;
}

void bind_texture(void* encoder, const BoundArgument& arg, const ParamInfo& param, const KernelInfo& kernel,
                  std::uint64_t registry_id) {
  const auto* storage = dynamic_cast<const MetalBufferStorage*>(arg.buffer.get());
  if (!storage || storage->registry_id() != registry_id)
    throw ArgumentError("kernel '" + kernel.name + "' texture(" + std::to_string(param.binding) + ") '" + param.name +
                        "' is a texture of another device: make it on the device the kernel runs on");
  const TextureDescriptor& d = arg.texture.descriptor();
  check_metal_texture(d);
  MTLTextureDescriptor* descriptor = [MTLTextureDescriptor new];
  [descriptor setTextureType:MTLTextureType2D];
  [descriptor setPixelFormat:pixel_format(d.format)];
  [descriptor setWidth:d.width];
  [descriptor setHeight:d.height];
  // A texture over a buffer must use the buffer's storage mode (metal_device.mm allocates shared buffers).
  [descriptor setStorageMode:MTLStorageModeShared];
  MTLTextureUsage usage = 0;
  if (d.usage & usage_read) usage |= MTLTextureUsageShaderRead;
  if (d.usage & usage_write) usage |= MTLTextureUsageShaderWrite;
  [descriptor setUsage:usage];
  id<MTLBuffer> buffer = (__bridge id<MTLBuffer>)storage->buffer();
  // The command buffer retains the texture (the queue makes retaining command buffers) until it completes.
  id<MTLTexture> texture = [buffer newTextureWithDescriptor:descriptor offset:0 bytesPerRow:arg.texture.row_pitch()];
  if (!texture)
    throw Error("[metal] unable to make a " + d.format.name() + " texture of " + std::to_string(d.width) + "x" +
                std::to_string(d.height) + " over its buffer for kernel '" + kernel.name + "'");
  [(__bridge id<MTLComputeCommandEncoder>)encoder setTexture:texture atIndex:static_cast<NSUInteger>(param.binding)];
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
