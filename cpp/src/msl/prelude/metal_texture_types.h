// metalcall MSL prelude: what a texture and a sampler are (the descriptors the runtime
// passes; cpp/src/core/texture.cpp must match them) and the sampler's options. The software
// texel formats and sampler are in metal_texture_sampling.h, the texture types in metal_texture.h.
#pragma once

namespace metal {

// What the runtime passes for a [[texture(i)]] parameter. Keep in step with core/texture.cpp.
struct mtl_texture_abi {
  void* data;                      // texel (0, 0) of slice 0
  unsigned long long row_pitch;    // bytes from one row to the next
  unsigned long long slice_pitch;  // bytes from one 2-D slice (depth, array element, cube face) to the next
  unsigned width, height, depth;
  unsigned array_length;           // 2-D slices but for texture3d: elements, 6 per cube, sample_count per element
  unsigned format;                 // channels | bytes per channel << 4 | kind << 8 (see mtl_tex)
  unsigned type;                   // metalcall::TextureType
  unsigned mip_levels;
  unsigned binding;                // the i of [[texture(i)]], for fault messages
  unsigned sample_count;           // samples per texel: a multisampled texture's slices are (element, sample)
  unsigned reserved;
  unsigned long long level_offset[16];     // bytes from data to each mip level's texel (0, 0) of slice 0
  unsigned long long level_row_pitch[16];  // each level's row pitch
};

// What the runtime passes for a [[sampler(i)]] parameter (and what constexpr samplers hold).
struct mtl_sampler_abi {
  unsigned mag, min, mip;      // filter: 0 nearest, 1 linear; mip: 0 none, 1 nearest, 2 linear
  unsigned s, t, r;            // address modes, numbered as MTLSamplerAddressMode
  unsigned normalized;         // 1: coord::normalized, 0: coord::pixel
  unsigned border;             // border_color
  float lod_min, lod_max;      // lod_clamp
  unsigned compare;            // compare_func, numbered as below (0: none)
};

enum class access { sample, read, write, read_write };
// MSL 3.2: a texture's writes are coherent within its threadgroup (the default) or across the
// device. Here every thread writes one memory, so both are honoured alike.
enum memory_coherence { memory_coherence_threadgroup, memory_coherence_device };
enum class coord { normalized, pixel };
enum class filter { nearest, linear };
enum class mag_filter { nearest, linear };
enum class min_filter { nearest, linear };
enum class mip_filter { none, nearest, linear };
// Numbered as MTLSamplerAddressMode, so that the host side can use one table.
enum class address { clamp_to_edge = 0, mirrored_clamp_to_edge = 1, repeat = 2, mirrored_repeat = 3,
                     clamp_to_zero = 4, clamp_to_border = 5 };
enum class s_address { clamp_to_edge = 0, mirrored_clamp_to_edge = 1, repeat = 2, mirrored_repeat = 3,
                       clamp_to_zero = 4, clamp_to_border = 5 };
enum class t_address { clamp_to_edge = 0, mirrored_clamp_to_edge = 1, repeat = 2, mirrored_repeat = 3,
                       clamp_to_zero = 4, clamp_to_border = 5 };
enum class r_address { clamp_to_edge = 0, mirrored_clamp_to_edge = 1, repeat = 2, mirrored_repeat = 3,
                       clamp_to_zero = 4, clamp_to_border = 5 };
enum class border_color { transparent_black, opaque_black, opaque_white };
// sample_compare / gather_compare: the reference value OP the texel, as MTLCompareFunction
// compares a new value with the existing one.
enum class compare_func { none, less, less_equal, greater, greater_equal, equal, not_equal, always, never };
enum class component { x, y, z, w };

// LOD options of sample(): level(l) samples LOD l; bias(b) adds b to the LOD a kernel
// samples without options (0); gradient2d/3d give the LOD of that footprint (isotropic:
// log2 of the longer derivative in texels of level 0). lod_clamp and max_anisotropy
// configure a constexpr sampler.
struct level {
  float lod;
  METAL_FUNC constexpr level(float l) : lod(l) {}
};
struct bias {
  float value;
  METAL_FUNC constexpr bias(float b) : value(b) {}
};
struct gradient2d {
  vec<float, 2> dPdx, dPdy;
  METAL_FUNC gradient2d(vec<float, 2> dx, vec<float, 2> dy) : dPdx(dx), dPdy(dy) {}
};
struct gradient3d {
  vec<float, 3> dPdx, dPdy;
  METAL_FUNC gradient3d(vec<float, 3> dx, vec<float, 3> dy) : dPdx(dx), dPdy(dy) {}
};
// MSL 2.2: the lowest LOD a sample may use (alone: LOD 0 raised to it; after bias or a
// gradient: that LOD raised to it), before the sampler's own lod_clamp.
struct min_lod_clamp {
  float value;
  METAL_FUNC constexpr min_lod_clamp(float v) : value(v) {}
};
struct lod_clamp {
  float min_value, max_value;
  METAL_FUNC constexpr lod_clamp(float lo, float hi) : min_value(lo), max_value(hi) {}
};
struct max_anisotropy {  // accepted: sampling here is isotropic
  int value;
  METAL_FUNC constexpr max_anisotropy(int n) : value(n) {}
};

struct sampler {
  mtl_sampler_abi mtl_a;
  // MSL's defaults: coord::normalized, address::clamp_to_edge, filter::nearest, mip_filter::none,
  // lod_clamp(0, FLT_MAX), compare_func::none.
  METAL_FUNC constexpr sampler() : mtl_a{0, 0, 0, 0, 0, 0, 1, 0, 0.0f, 3.402823466e+38f, 0} {}
  METAL_FUNC explicit constexpr sampler(const mtl_sampler_abi& abi) : mtl_a(abi) {}
  template <class First, class... Rest>
  METAL_FUNC constexpr sampler(First first, Rest... rest) : sampler(rest...) { set(first); }

 private:
  METAL_FUNC constexpr void set(coord c) { mtl_a.normalized = c == coord::normalized ? 1u : 0u; }
  METAL_FUNC constexpr void set(filter f) { mtl_a.mag = mtl_a.min = unsigned(f); }
  METAL_FUNC constexpr void set(mag_filter f) { mtl_a.mag = unsigned(f); }
  METAL_FUNC constexpr void set(min_filter f) { mtl_a.min = unsigned(f); }
  METAL_FUNC constexpr void set(mip_filter f) { mtl_a.mip = unsigned(f); }
  METAL_FUNC constexpr void set(address m) { mtl_a.s = mtl_a.t = mtl_a.r = unsigned(m); }
  METAL_FUNC constexpr void set(s_address m) { mtl_a.s = unsigned(m); }
  METAL_FUNC constexpr void set(t_address m) { mtl_a.t = unsigned(m); }
  METAL_FUNC constexpr void set(r_address m) { mtl_a.r = unsigned(m); }
  METAL_FUNC constexpr void set(border_color b) { mtl_a.border = unsigned(b); }
  METAL_FUNC constexpr void set(lod_clamp c) { mtl_a.lod_min = c.min_value, mtl_a.lod_max = c.max_value; }
  METAL_FUNC constexpr void set(max_anisotropy) {}
  METAL_FUNC constexpr void set(compare_func f) { mtl_a.compare = unsigned(f); }
};

}  // namespace metal
