// Textures and samplers on Metal: the MTLTextures and MTLSamplerStates a plan lists
// (backends/metal_plan/plan.hpp), made as the plan says: each descriptor property is the
// plan's, translated to Metal's enumerations. Which texture is made over its buffer and
// which is staged, its type, storage and usage, and the blits, are the planner's decisions.
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
  switch (f.layout) {
    case PixelLayout::bgra: return f.srgb ? MTLPixelFormatBGRA8Unorm_sRGB : MTLPixelFormatBGRA8Unorm;
    case PixelLayout::rgb10a2: return k == PixelKind::uint ? MTLPixelFormatRGB10A2Uint : MTLPixelFormatRGB10A2Unorm;
    case PixelLayout::rg11b10: return MTLPixelFormatRG11B10Float;
    case PixelLayout::rgb9e5: return MTLPixelFormatRGB9E5Float;
    case PixelLayout::plain: break;
  }
  if (f.srgb)  // unorm8 only; R8/RG8Unorm_sRGB on Apple GPUs (check_metal_pixel_format)
    return f.channels == 1 ? MTLPixelFormatR8Unorm_sRGB : f.channels == 2 ? MTLPixelFormatRG8Unorm_sRGB
                                                                           : MTLPixelFormatRGBA8Unorm_sRGB;
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

MTLTextureType texture_type(PlanTextureDescriptor::Type t) {
  switch (t) {
    case PlanTextureDescriptor::Type::type1d: return MTLTextureType1D;
    case PlanTextureDescriptor::Type::type1d_array: return MTLTextureType1DArray;
    case PlanTextureDescriptor::Type::texture_buffer: return MTLTextureTypeTextureBuffer;
    case PlanTextureDescriptor::Type::type3d: return MTLTextureType3D;
    case PlanTextureDescriptor::Type::type2d_array: return MTLTextureType2DArray;
    case PlanTextureDescriptor::Type::cube: return MTLTextureTypeCube;
    case PlanTextureDescriptor::Type::cube_array: return MTLTextureTypeCubeArray;
    case PlanTextureDescriptor::Type::type2d: break;
  }
  return MTLTextureType2D;
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

void* make_texture(void* device, const PlanTexture& planned, void* buffer) {
  const PlanTextureDescriptor& d = planned.descriptor;
  MTLTextureDescriptor* descriptor = [MTLTextureDescriptor new];
  [descriptor setTextureType:texture_type(d.type)];
  [descriptor setPixelFormat:d.depth32_float ? MTLPixelFormatDepth32Float : pixel_format(d.format)];
  [descriptor setWidth:d.width];
  [descriptor setHeight:d.height];
  [descriptor setDepth:d.depth];
  [descriptor setArrayLength:d.array_length];
  [descriptor setMipmapLevelCount:d.mipmap_levels];
  [descriptor setStorageMode:d.private_storage ? MTLStorageModePrivate : MTLStorageModeShared];
  MTLTextureUsage usage = (d.shader_read ? MTLTextureUsageShaderRead : 0) | (d.shader_write ? MTLTextureUsageShaderWrite : 0);
  // Texture atomics are MSL 3.1's: a kernel with them compiles only on macOS 14 and later.
#if __MAC_OS_X_VERSION_MAX_ALLOWED >= 140000
  if (@available(macOS 14.0, *)) usage |= d.shader_atomic ? MTLTextureUsageShaderAtomic : 0;
#endif
  [descriptor setUsage:usage];
  id<MTLTexture> texture =
      planned.source == PlanTexture::Source::over_buffer
          ? [(__bridge id<MTLBuffer>)buffer newTextureWithDescriptor:descriptor offset:0 bytesPerRow:planned.bytes_per_row]
          : [(__bridge id<MTLDevice>)device newTextureWithDescriptor:descriptor];
  if (!texture)
    throw Error("[metal] unable to make a texture of format " + d.format.name() + " (" + std::to_string(d.width) + "x" +
                std::to_string(d.height) + "): the GPU may be out of memory");
  return (__bridge_retained void*)texture;
}

void* make_sampler_state(void* device, const Sampler& s) {
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
  [descriptor setCompareFunction:compare_function(s.compare_func)];  // none: Never, Metal's default
  id<MTLSamplerState> state = [(__bridge id<MTLDevice>)device newSamplerStateWithDescriptor:descriptor];
  if (!state) throw Error("[metal] unable to make a sampler state: the GPU may be out of memory");
  return (__bridge_retained void*)state;
}

}  // namespace metalcall::metal
