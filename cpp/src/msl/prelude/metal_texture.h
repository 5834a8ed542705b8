// metalcall MSL prelude: textures and samplers in compute kernels (CPU and CUDA backends).
// A texture is a descriptor of host memory (mtl_texture_abi, filled in by the
// runtime: cpp/src/core/texture.cpp must match it; on CUDA the texels are pitched
// linear managed memory); reads, writes, sampling and
// gathers are done in software by the rules of Metal's pixel formats and samplers.
// Mip levels follow level 0 in the same storage, each with its own offset and row pitch;
// sample() picks and blends levels from an explicit LOD (level(), bias(), gradient2d/3d())
// by the sampler's mip filter and LOD clamps; without one a kernel samples LOD 0.
#pragma once

#include "metal_texture_sampling.h"
#include "metal_texture_atomic.h"

namespace metal {

namespace mtl_tex {
// The LOD that a sample() option asks for (see level, bias, gradient2d/3d).
template <class O> struct lod_option { static constexpr bool value = false; };
template <> struct lod_option<level> { static constexpr bool value = true; };
template <> struct lod_option<bias> { static constexpr bool value = true; };
template <> struct lod_option<gradient2d> { static constexpr bool value = true; };
template <> struct lod_option<gradient3d> { static constexpr bool value = true; };
template <> struct lod_option<min_lod_clamp> { static constexpr bool value = true; };
// Options that min_lod_clamp may follow: sample(s, p, bias(b) | gradient(...), min_lod_clamp(c)).
template <class O> struct clampable_option { static constexpr bool value = lod_option<O>::value; };
template <> struct clampable_option<level> { static constexpr bool value = false; };
template <> struct clampable_option<min_lod_clamp> { static constexpr bool value = false; };
METAL_FUNC float lod_of(const mtl_texture_abi&, const mtl_sampler_abi&, level o) { return o.lod; }
METAL_FUNC float lod_of(const mtl_texture_abi&, const mtl_sampler_abi&, bias o) { return o.value; }
METAL_FUNC float lod_of(const mtl_texture_abi& d, const mtl_sampler_abi& s, const gradient2d& g) {
  return gradient_lod(d, s, vec<float, 3>(g.dPdx.x, g.dPdx.y, 0.0f), vec<float, 3>(g.dPdy.x, g.dPdy.y, 0.0f));
}
METAL_FUNC float lod_of(const mtl_texture_abi& d, const mtl_sampler_abi& s, const gradient3d& g) {
  return gradient_lod(d, s, g.dPdx, g.dPdy);
}
METAL_FUNC float lod_of(const mtl_texture_abi&, const mtl_sampler_abi&, min_lod_clamp c) { return c.value > 0.0f ? c.value : 0.0f; }
template <class O> METAL_FUNC float lod_of(const mtl_texture_abi& d, const mtl_sampler_abi& s, const O& o, min_lod_clamp c) {
  const float lod = lod_of(d, s, o);
  return lod < c.value ? c.value : lod;
}
}  // namespace mtl_tex

// What every texture type holds: the runtime's descriptor. Sizes of a mip level the
// texture lacks are 0.
struct mtl_texture_base {
  const mtl_texture_abi* mtl_d = nullptr;
  mtl_texture_base() = default;
  METAL_FUNC explicit mtl_texture_base(const mtl_texture_abi* abi) : mtl_d(abi) {}
  METAL_FUNC unsigned get_width(unsigned lod = 0) const { return lod < mtl_d->mip_levels ? mtl_tex::halved(mtl_d->width, lod) : 0u; }
  METAL_FUNC unsigned get_height(unsigned lod = 0) const {
    return lod < mtl_d->mip_levels ? mtl_tex::halved(mtl_d->height, lod) : 0u;
  }
  METAL_FUNC unsigned get_num_mip_levels() const { return mtl_d->mip_levels; }
};
// MSL's is_null_texture(t) for every texture type: whether no texture is bound (a call binds
// every texture a kernel uses, so this is false there; a default-constructed one is null).
METAL_FUNC bool is_null_texture(const mtl_texture_base& t) { return t.mtl_d == nullptr || t.mtl_d->data == nullptr; }

template <class T, access A = access::sample, memory_coherence mtl_coherence = memory_coherence_threadgroup> struct texture1d : mtl_texture_base {
  using mtl_texture_base::mtl_texture_base;
  template <class C> METAL_FUNC vec<T, 4> read(C x, unsigned lod = 0) const {
    return mtl_tex::read<T>(*mtl_d, lod, unsigned(x), 0u, 0u);
  }
  template <class V, class C> METAL_FUNC void write(const vec<V, 4>& c, C x, unsigned lod = 0) const {
    mtl_tex::write<T>(*mtl_d, lod, mtl_tex::cast4<T>(c), unsigned(x), 0u, 0u);
  }
  // A scalar colour converts to the texel vector, as MSL converts a scalar where a vector is expected.
  template <class S, class C, enable_if_t<mtl_detail::is_scalar<S>::value, int> = 0>
  METAL_FUNC void write(S c, C x, unsigned lod = 0) const { write(vec<T, 4>(T(c)), x, lod); }
  METAL_FUNC vec<T, 4> sample(sampler s, float x) const {
    return mtl_tex::cast4<T>(mtl_tex::sample<mtl_tex::sampled_t<T>>(*mtl_d, s.mtl_a, 1, x, 0.0f, 0.0f, 0u));
  }
  METAL_FUNC unsigned get_width(unsigned lod = 0) const { return mtl_texture_base::get_width(lod); }
  MTL_TEXTURE_ATOMICS(x, 0u, 0u, unsigned x)
  MTL_TEXTURE_FENCE
};

// Elements of one row each: slice `array` of a 1-D texture (one mip level, as texture1d).
template <class T, access A = access::sample, memory_coherence mtl_coherence = memory_coherence_threadgroup> struct texture1d_array : mtl_texture_base {
  using mtl_texture_base::mtl_texture_base;
  template <class C> METAL_FUNC vec<T, 4> read(C x, unsigned array, unsigned lod = 0) const {
    return mtl_tex::read<T>(*mtl_d, lod, unsigned(x), 0u, array);
  }
  template <class V, class C> METAL_FUNC void write(const vec<V, 4>& c, C x, unsigned array, unsigned lod = 0) const {
    mtl_tex::write<T>(*mtl_d, lod, mtl_tex::cast4<T>(c), unsigned(x), 0u, array);
  }
  template <class S, class C, enable_if_t<mtl_detail::is_scalar<S>::value, int> = 0>
  METAL_FUNC void write(S c, C x, unsigned array, unsigned lod = 0) const { write(vec<T, 4>(T(c)), x, array, lod); }
  // Metal clamps the array index of sample.
  METAL_FUNC vec<T, 4> sample(sampler s, float x, unsigned array) const {
    return mtl_tex::cast4<T>(mtl_tex::sample<mtl_tex::sampled_t<T>>(*mtl_d, s.mtl_a, 1, x, 0.0f, 0.0f,
                                                                     mtl_tex::clamped_element(*mtl_d, array, 1u)));
  }
  METAL_FUNC unsigned get_width(unsigned lod = 0) const { return mtl_texture_base::get_width(lod); }
  METAL_FUNC unsigned get_array_size() const { return mtl_d->array_length; }
  MTL_TEXTURE_ATOMICS(x, 0u, array, unsigned x, unsigned array)
  MTL_TEXTURE_FENCE
};

// MSL 2.1's texture_buffer: a 1-D texture over buffer memory, read and written by texel (no
// sampling, no mip levels; access::read by default).
template <class T, access A = access::read, memory_coherence mtl_coherence = memory_coherence_threadgroup> struct texture_buffer : mtl_texture_base {
  using mtl_texture_base::mtl_texture_base;
  template <class C> METAL_FUNC vec<T, 4> read(C x) const { return mtl_tex::read<T>(*mtl_d, 0u, unsigned(x), 0u, 0u); }
  template <class V, class C> METAL_FUNC void write(const vec<V, 4>& c, C x) const {
    mtl_tex::write<T>(*mtl_d, 0u, mtl_tex::cast4<T>(c), unsigned(x), 0u, 0u);
  }
  template <class S, class C, enable_if_t<mtl_detail::is_scalar<S>::value, int> = 0>
  METAL_FUNC void write(S c, C x) const { write(vec<T, 4>(T(c)), x); }
  METAL_FUNC unsigned get_width() const { return mtl_d->width; }
  MTL_TEXTURE_ATOMICS(x, 0u, 0u, unsigned x)
  MTL_TEXTURE_FENCE
};

template <class T, access A = access::sample, memory_coherence mtl_coherence = memory_coherence_threadgroup> struct texture2d : mtl_texture_base {
  using mtl_texture_base::mtl_texture_base;
  template <class C> METAL_FUNC vec<T, 4> read(const vec<C, 2>& p, unsigned lod = 0) const {
    return mtl_tex::read<T>(*mtl_d, lod, unsigned(p.x), unsigned(p.y), 0u);
  }
  template <class V, class C> METAL_FUNC void write(const vec<V, 4>& c, const vec<C, 2>& p, unsigned lod = 0) const {
    mtl_tex::write<T>(*mtl_d, lod, mtl_tex::cast4<T>(c), unsigned(p.x), unsigned(p.y), 0u);
  }
  // A scalar colour converts to the texel vector, as MSL converts a scalar where a vector is expected.
  template <class S, class C, enable_if_t<mtl_detail::is_scalar<S>::value, int> = 0>
  METAL_FUNC void write(S c, const vec<C, 2>& p, unsigned lod = 0) const { write(vec<T, 4>(T(c)), p, lod); }
  METAL_FUNC vec<T, 4> sample(sampler s, const vec<float, 2>& p, const vec<int, 2>& offset = vec<int, 2>(0, 0)) const {
    return mtl_tex::cast4<T>(mtl_tex::sample<mtl_tex::sampled_t<T>>(*mtl_d, s.mtl_a, 2, p.x, p.y, 0.0f, 0u, offset.x, offset.y));
  }
  template <class O, enable_if_t<mtl_tex::lod_option<O>::value, int> = 0>
  METAL_FUNC vec<T, 4> sample(sampler s, const vec<float, 2>& p, const O& options,
                              const vec<int, 2>& offset = vec<int, 2>(0, 0)) const {
    return mtl_tex::cast4<T>(mtl_tex::sample<mtl_tex::sampled_t<T>>(*mtl_d, s.mtl_a, 2, p.x, p.y, 0.0f, 0u, offset.x, offset.y, 0,
                                             mtl_tex::lod_of(*mtl_d, s.mtl_a, options)));
  }
  template <class O, enable_if_t<mtl_tex::clampable_option<O>::value, int> = 0>
  METAL_FUNC vec<T, 4> sample(sampler s, const vec<float, 2>& p, const O& options, min_lod_clamp c,
                              const vec<int, 2>& offset = vec<int, 2>(0, 0)) const {
    return mtl_tex::cast4<T>(mtl_tex::sample<mtl_tex::sampled_t<T>>(*mtl_d, s.mtl_a, 2, p.x, p.y, 0.0f, 0u, offset.x, offset.y, 0,
                                                                     mtl_tex::lod_of(*mtl_d, s.mtl_a, options, c)));
  }
  METAL_FUNC vec<T, 4> gather(sampler s, const vec<float, 2>& p, const vec<int, 2>& offset = vec<int, 2>(0, 0),
                              component c = component::x) const {
    return mtl_tex::cast4<T>(mtl_tex::gather<mtl_tex::sampled_t<T>>(*mtl_d, s.mtl_a, p.x, p.y, 0u, offset.x, offset.y, unsigned(c)));
  }
  MTL_TEXTURE_ATOMICS(p.x, p.y, 0u, const vec<unsigned, 2>& p)
  MTL_TEXTURE_FENCE
};

template <class T, access A = access::sample, memory_coherence mtl_coherence = memory_coherence_threadgroup> struct texture2d_array : mtl_texture_base {
  using mtl_texture_base::mtl_texture_base;
  template <class C> METAL_FUNC vec<T, 4> read(const vec<C, 2>& p, unsigned slice, unsigned lod = 0) const {
    return mtl_tex::read<T>(*mtl_d, lod, unsigned(p.x), unsigned(p.y), slice);
  }
  template <class V, class C>
  METAL_FUNC void write(const vec<V, 4>& c, const vec<C, 2>& p, unsigned slice, unsigned lod = 0) const {
    mtl_tex::write<T>(*mtl_d, lod, mtl_tex::cast4<T>(c), unsigned(p.x), unsigned(p.y), slice);
  }
  // A scalar colour converts to the texel vector, as MSL converts a scalar where a vector is expected.
  template <class S, class C, enable_if_t<mtl_detail::is_scalar<S>::value, int> = 0>
  METAL_FUNC void write(S c, const vec<C, 2>& p, unsigned slice, unsigned lod = 0) const { write(vec<T, 4>(T(c)), p, slice, lod); }
  METAL_FUNC vec<T, 4> sample(sampler s, const vec<float, 2>& p, unsigned slice,
                              const vec<int, 2>& offset = vec<int, 2>(0, 0)) const {
    return mtl_tex::cast4<T>(mtl_tex::sample<mtl_tex::sampled_t<T>>(*mtl_d, s.mtl_a, 2, p.x, p.y, 0.0f, clamped(slice), offset.x, offset.y));
  }
  template <class O, enable_if_t<mtl_tex::lod_option<O>::value, int> = 0>
  METAL_FUNC vec<T, 4> sample(sampler s, const vec<float, 2>& p, unsigned slice, const O& options,
                              const vec<int, 2>& offset = vec<int, 2>(0, 0)) const {
    return mtl_tex::cast4<T>(mtl_tex::sample<mtl_tex::sampled_t<T>>(*mtl_d, s.mtl_a, 2, p.x, p.y, 0.0f, clamped(slice), offset.x, offset.y, 0,
                                             mtl_tex::lod_of(*mtl_d, s.mtl_a, options)));
  }
  template <class O, enable_if_t<mtl_tex::clampable_option<O>::value, int> = 0>
  METAL_FUNC vec<T, 4> sample(sampler s, const vec<float, 2>& p, unsigned slice, const O& options, min_lod_clamp c,
                              const vec<int, 2>& offset = vec<int, 2>(0, 0)) const {
    return mtl_tex::cast4<T>(mtl_tex::sample<mtl_tex::sampled_t<T>>(*mtl_d, s.mtl_a, 2, p.x, p.y, 0.0f, clamped(slice), offset.x,
                                                                     offset.y, 0, mtl_tex::lod_of(*mtl_d, s.mtl_a, options, c)));
  }
  METAL_FUNC vec<T, 4> gather(sampler s, const vec<float, 2>& p, unsigned slice,
                              const vec<int, 2>& offset = vec<int, 2>(0, 0), component c = component::x) const {
    return mtl_tex::cast4<T>(mtl_tex::gather<mtl_tex::sampled_t<T>>(*mtl_d, s.mtl_a, p.x, p.y, clamped(slice), offset.x, offset.y, unsigned(c)));
  }
  METAL_FUNC unsigned get_array_size() const { return mtl_d->array_length; }
  MTL_TEXTURE_ATOMICS(p.x, p.y, slice, const vec<unsigned, 2>& p, unsigned slice)
  MTL_TEXTURE_FENCE

 private:
  // Metal clamps the array index of sample and gather.
  METAL_FUNC unsigned clamped(unsigned slice) const {
    const unsigned n = mtl_d->array_length ? mtl_d->array_length - 1 : 0;
    return slice > n ? n : slice;
  }
};

template <class T, access A = access::sample, memory_coherence mtl_coherence = memory_coherence_threadgroup> struct texture3d : mtl_texture_base {
  using mtl_texture_base::mtl_texture_base;
  template <class C> METAL_FUNC vec<T, 4> read(const vec<C, 3>& p, unsigned lod = 0) const {
    return mtl_tex::read<T>(*mtl_d, lod, unsigned(p.x), unsigned(p.y), unsigned(p.z));
  }
  template <class V, class C> METAL_FUNC void write(const vec<V, 4>& c, const vec<C, 3>& p, unsigned lod = 0) const {
    mtl_tex::write<T>(*mtl_d, lod, mtl_tex::cast4<T>(c), unsigned(p.x), unsigned(p.y), unsigned(p.z));
  }
  // A scalar colour converts to the texel vector, as MSL converts a scalar where a vector is expected.
  template <class S, class C, enable_if_t<mtl_detail::is_scalar<S>::value, int> = 0>
  METAL_FUNC void write(S c, const vec<C, 3>& p, unsigned lod = 0) const { write(vec<T, 4>(T(c)), p, lod); }
  METAL_FUNC vec<T, 4> sample(sampler s, const vec<float, 3>& p, const vec<int, 3>& offset = vec<int, 3>(0, 0, 0)) const {
    return mtl_tex::cast4<T>(mtl_tex::sample<mtl_tex::sampled_t<T>>(*mtl_d, s.mtl_a, 3, p.x, p.y, p.z, 0u, offset.x, offset.y, offset.z));
  }
  template <class O, enable_if_t<mtl_tex::lod_option<O>::value, int> = 0>
  METAL_FUNC vec<T, 4> sample(sampler s, const vec<float, 3>& p, const O& options,
                              const vec<int, 3>& offset = vec<int, 3>(0, 0, 0)) const {
    return mtl_tex::cast4<T>(mtl_tex::sample<mtl_tex::sampled_t<T>>(*mtl_d, s.mtl_a, 3, p.x, p.y, p.z, 0u, offset.x, offset.y, offset.z,
                                             mtl_tex::lod_of(*mtl_d, s.mtl_a, options)));
  }
  template <class O, enable_if_t<mtl_tex::clampable_option<O>::value, int> = 0>
  METAL_FUNC vec<T, 4> sample(sampler s, const vec<float, 3>& p, const O& options, min_lod_clamp c,
                              const vec<int, 3>& offset = vec<int, 3>(0, 0, 0)) const {
    return mtl_tex::cast4<T>(mtl_tex::sample<mtl_tex::sampled_t<T>>(*mtl_d, s.mtl_a, 3, p.x, p.y, p.z, 0u, offset.x, offset.y,
                                                                     offset.z, mtl_tex::lod_of(*mtl_d, s.mtl_a, options, c)));
  }
  METAL_FUNC unsigned get_depth(unsigned lod = 0) const { return lod < mtl_d->mip_levels ? mtl_tex::halved(mtl_d->depth, lod) : 0u; }
  MTL_TEXTURE_ATOMICS(p.x, p.y, p.z, const vec<unsigned, 3>& p)
  MTL_TEXTURE_FENCE
};

// Six faces of square 2-D images, in Metal's order +X, -X, +Y, -Y, +Z, -Z. Sampling
// picks the face; linear footprints past its edge take the adjacent face's texels (seamless, as Metal's).
template <class T, access A = access::sample, memory_coherence mtl_coherence = memory_coherence_threadgroup> struct texturecube : mtl_texture_base {
  using mtl_texture_base::mtl_texture_base;
  template <class C> METAL_FUNC vec<T, 4> read(const vec<C, 2>& p, unsigned face, unsigned lod = 0) const {
    return mtl_tex::read<T>(*mtl_d, lod, unsigned(p.x), unsigned(p.y), face);
  }
  template <class V, class C>
  METAL_FUNC void write(const vec<V, 4>& c, const vec<C, 2>& p, unsigned face, unsigned lod = 0) const {
    mtl_tex::write<T>(*mtl_d, lod, mtl_tex::cast4<T>(c), unsigned(p.x), unsigned(p.y), face);
  }
  // A scalar colour converts to the texel vector, as MSL converts a scalar where a vector is expected.
  template <class S, class C, enable_if_t<mtl_detail::is_scalar<S>::value, int> = 0>
  METAL_FUNC void write(S c, const vec<C, 2>& p, unsigned face, unsigned lod = 0) const { write(vec<T, 4>(T(c)), p, face, lod); }
  MTL_TEXTURE_FENCE
  // MSL 4's atomics on a cube's texel (SPIRV-Cross's image-cube-atomic), as texturecube_array's.
  MTL_TEXTURE_ATOMICS(p.x, p.y, face, const vec<unsigned, 2>& p, unsigned face)
  METAL_FUNC vec<T, 4> sample(sampler s, const vec<float, 3>& dir) const { return sample_at(s, dir, 0.0f); }
  METAL_FUNC vec<T, 4> sample(sampler s, const vec<float, 3>& dir, level l) const { return sample_at(s, dir, l.lod); }
  METAL_FUNC vec<T, 4> sample(sampler s, const vec<float, 3>& dir, bias b) const { return sample_at(s, dir, b.value); }
  METAL_FUNC vec<T, 4> sample(sampler s, const vec<float, 3>& dir, min_lod_clamp c) const {
    return sample_at(s, dir, c.value > 0.0f ? c.value : 0.0f);
  }
  METAL_FUNC vec<T, 4> sample(sampler s, const vec<float, 3>& dir, bias b, min_lod_clamp c) const {
    return sample_at(s, dir, b.value < c.value ? c.value : b.value);
  }
  METAL_FUNC vec<T, 4> gather(sampler s, const vec<float, 3>& dir, component c = component::x) const {
    return mtl_tex::cast4<T>(mtl_tex::gather_cube<mtl_tex::sampled_t<T>>(*mtl_d, s.mtl_a, dir, 0u, unsigned(c)));
  }

 private:
  METAL_FUNC vec<T, 4> sample_at(sampler s, const vec<float, 3>& dir, float lod) const {
    return mtl_tex::cast4<T>(mtl_tex::sample_cube<mtl_tex::sampled_t<T>>(*mtl_d, s.mtl_a, dir, 0u, lod));
  }
};

// A depth texture reads and samples one float.
template <class T, access A = access::sample, memory_coherence mtl_coherence = memory_coherence_threadgroup> struct depth2d : mtl_texture_base {
  using mtl_texture_base::mtl_texture_base;
  template <class C> METAL_FUNC T read(const vec<C, 2>& p, unsigned lod = 0) const {
    return mtl_tex::read<T>(*mtl_d, lod, unsigned(p.x), unsigned(p.y), 0u).x;
  }
  template <class C> METAL_FUNC void write(T v, const vec<C, 2>& p, unsigned lod = 0) const {
    mtl_tex::write<T>(*mtl_d, lod, vec<T, 4>(v, mtl_tex::cvt<T>(0), mtl_tex::cvt<T>(0), mtl_tex::cvt<T>(1)), unsigned(p.x),
                      unsigned(p.y), 0u);
  }
  METAL_FUNC T sample(sampler s, const vec<float, 2>& p, const vec<int, 2>& offset = vec<int, 2>(0, 0)) const {
    return mtl_tex::cvt<T>(mtl_tex::sample(*mtl_d, s.mtl_a, 2, p.x, p.y, 0.0f, 0u, offset.x, offset.y).x);
  }
  template <class O, enable_if_t<mtl_tex::lod_option<O>::value, int> = 0>
  METAL_FUNC T sample(sampler s, const vec<float, 2>& p, const O& options, const vec<int, 2>& offset = vec<int, 2>(0, 0)) const {
    return mtl_tex::cvt<T>(
        mtl_tex::sample(*mtl_d, s.mtl_a, 2, p.x, p.y, 0.0f, 0u, offset.x, offset.y, 0, mtl_tex::lod_of(*mtl_d, s.mtl_a, options)).x);
  }
  METAL_FUNC vec<T, 4> gather(sampler s, const vec<float, 2>& p, const vec<int, 2>& offset = vec<int, 2>(0, 0)) const {
    return mtl_tex::cast4<T>(mtl_tex::gather<mtl_tex::sampled_t<T>>(*mtl_d, s.mtl_a, p.x, p.y, 0u, offset.x, offset.y, 0u));
  }
  // The filtered comparison of compare_value with the texels (the sampler's compare_func):
  // the fraction of the footprint that passes.
  METAL_FUNC T sample_compare(sampler s, const vec<float, 2>& p, float compare_value,
                              const vec<int, 2>& offset = vec<int, 2>(0, 0)) const {
    return mtl_tex::cvt<T>(
        mtl_tex::sample(*mtl_d, s.mtl_a, 2, p.x, p.y, 0.0f, 0u, offset.x, offset.y, 0, 0.0f, &compare_value).x);
  }
  METAL_FUNC T sample_compare(sampler s, const vec<float, 2>& p, float compare_value, level l,
                              const vec<int, 2>& offset = vec<int, 2>(0, 0)) const {
    return mtl_tex::cvt<T>(
        mtl_tex::sample(*mtl_d, s.mtl_a, 2, p.x, p.y, 0.0f, 0u, offset.x, offset.y, 0, l.lod, &compare_value).x);
  }
  METAL_FUNC T sample_compare(sampler s, const vec<float, 2>& p, float compare_value, min_lod_clamp c,
                              const vec<int, 2>& offset = vec<int, 2>(0, 0)) const {
    return sample_compare(s, p, compare_value, level(c.value > 0.0f ? c.value : 0.0f), offset);
  }
  METAL_FUNC vec<T, 4> gather_compare(sampler s, const vec<float, 2>& p, float compare_value,
                                      const vec<int, 2>& offset = vec<int, 2>(0, 0)) const {
    return mtl_tex::cast4<T>(mtl_tex::gather<mtl_tex::sampled_t<T>>(*mtl_d, s.mtl_a, p.x, p.y, 0u, offset.x, offset.y, 0u, &compare_value));
  }
};

// An `array<texture2d<T>, N>` kernel parameter from its N descriptors (the entry point's).
template <class T, size_t N> METAL_FUNC void mtl_bind_textures(array<T, N>& textures, const mtl_texture_abi* abi) {
  for (size_t i = 0; i < N; ++i) textures.mtl_elements[i] = T(abi + i);
}

}  // namespace metal

#include "metal_texture_layered.h"
#include "metal_texture_ms.h"
