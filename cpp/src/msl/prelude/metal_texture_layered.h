// metalcall MSL prelude: the layered texture types beside metal_texture.h's: texturecube_array
// (6 faces per cube, slice element * 6 + face), depth2d_array, depthcube and depthcube_array
// (depth textures read and sample one value; sample_compare and gather_compare as depth2d's).
// Sampling a cube picks the face the direction points at (mtl_tex::sample_cube); Metal clamps
// the array index of sample and gather.
#pragma once

namespace metal {

template <class T, access A = access::sample, memory_coherence mtl_coherence = memory_coherence_threadgroup>
struct texturecube_array : mtl_texture_base {
  using mtl_texture_base::mtl_texture_base;
  template <class U>
  METAL_FUNC vec<T, 4> read(const vec<U, 2>& p, unsigned face, unsigned element, unsigned lod = 0) const {
    return mtl_tex::read<T>(*mtl_d, lod, unsigned(p.x), unsigned(p.y), slice(face, element));
  }
  template <class V, class U>
  METAL_FUNC void write(const vec<V, 4>& c, const vec<U, 2>& p, unsigned face, unsigned element, unsigned lod = 0) const {
    mtl_tex::write<T>(*mtl_d, lod, mtl_tex::cast4<T>(c), unsigned(p.x), unsigned(p.y), slice(face, element));
  }
  template <class S, class U, enable_if_t<mtl_detail::is_scalar<S>::value, int> = 0>
  METAL_FUNC void write(S c, const vec<U, 2>& p, unsigned face, unsigned element, unsigned lod = 0) const {
    write(vec<T, 4>(T(c)), p, face, element, lod);
  }
  METAL_FUNC vec<T, 4> sample(sampler s, const vec<float, 3>& dir, unsigned element) const { return at(s, dir, element, 0.0f); }
  METAL_FUNC vec<T, 4> sample(sampler s, const vec<float, 3>& dir, unsigned element, level l) const {
    return at(s, dir, element, l.lod);
  }
  METAL_FUNC vec<T, 4> sample(sampler s, const vec<float, 3>& dir, unsigned element, bias b) const {
    return at(s, dir, element, b.value);
  }
  METAL_FUNC vec<T, 4> gather(sampler s, const vec<float, 3>& dir, unsigned element, component c = component::x) const {
    return mtl_tex::cast4<T>(mtl_tex::gather_cube<mtl_tex::sampled_t<T>>(*mtl_d, s.mtl_a, dir, 6u * mtl_tex::clamped_element(*mtl_d, element, 6u), unsigned(c)));
  }
  METAL_FUNC unsigned get_array_size() const { return mtl_d->array_length / 6u; }
  MTL_TEXTURE_ATOMICS(p.x, p.y, slice(face, element), const vec<unsigned, 2>& p, unsigned face, unsigned element)
  MTL_TEXTURE_FENCE

 private:
  // A face past 5 names no slice (read as outside the texture).
  METAL_FUNC unsigned slice(unsigned face, unsigned element) const { return face < 6u ? element * 6u + face : ~0u; }
  METAL_FUNC vec<T, 4> at(sampler s, const vec<float, 3>& dir, unsigned element, float lod) const {
    return mtl_tex::cast4<T>(mtl_tex::sample_cube<mtl_tex::sampled_t<T>>(*mtl_d, s.mtl_a, dir, 6u * mtl_tex::clamped_element(*mtl_d, element, 6u), lod));
  }
};

template <class T, access A = access::sample, memory_coherence mtl_coherence = memory_coherence_threadgroup>
struct depth2d_array : mtl_texture_base {
  using mtl_texture_base::mtl_texture_base;
  template <class U> METAL_FUNC T read(const vec<U, 2>& p, unsigned element, unsigned lod = 0) const {
    return mtl_tex::read<T>(*mtl_d, lod, unsigned(p.x), unsigned(p.y), element).x;
  }
  template <class U> METAL_FUNC void write(T v, const vec<U, 2>& p, unsigned element, unsigned lod = 0) const {
    mtl_tex::write<T>(*mtl_d, lod, vec<T, 4>(v, T(0), T(0), T(1)), unsigned(p.x), unsigned(p.y), element);
  }
  METAL_FUNC T sample(sampler s, const vec<float, 2>& p, unsigned element, const vec<int, 2>& offset = vec<int, 2>(0, 0)) const {
    return at(s, p, element, offset, 0.0f, nullptr);
  }
  template <class O, enable_if_t<mtl_tex::lod_option<O>::value, int> = 0>
  METAL_FUNC T sample(sampler s, const vec<float, 2>& p, unsigned element, const O& options,
                      const vec<int, 2>& offset = vec<int, 2>(0, 0)) const {
    return at(s, p, element, offset, mtl_tex::lod_of(*mtl_d, s.mtl_a, options), nullptr);
  }
  METAL_FUNC T sample_compare(sampler s, const vec<float, 2>& p, unsigned element, float compare_value,
                              const vec<int, 2>& offset = vec<int, 2>(0, 0)) const {
    return at(s, p, element, offset, 0.0f, &compare_value);
  }
  METAL_FUNC T sample_compare(sampler s, const vec<float, 2>& p, unsigned element, float compare_value, level l,
                              const vec<int, 2>& offset = vec<int, 2>(0, 0)) const {
    return at(s, p, element, offset, l.lod, &compare_value);
  }
  METAL_FUNC T sample_compare(sampler s, const vec<float, 2>& p, unsigned element, float compare_value, min_lod_clamp c,
                              const vec<int, 2>& offset = vec<int, 2>(0, 0)) const {
    return at(s, p, element, offset, c.value > 0.0f ? c.value : 0.0f, &compare_value);
  }
  METAL_FUNC vec<T, 4> gather(sampler s, const vec<float, 2>& p, unsigned element, const vec<int, 2>& offset = vec<int, 2>(0, 0)) const {
    return mtl_tex::cast4<T>(mtl_tex::gather<mtl_tex::sampled_t<T>>(*mtl_d, s.mtl_a, p.x, p.y, clamped(element), offset.x, offset.y, 0u));
  }
  METAL_FUNC vec<T, 4> gather_compare(sampler s, const vec<float, 2>& p, unsigned element, float compare_value,
                                      const vec<int, 2>& offset = vec<int, 2>(0, 0)) const {
    return mtl_tex::cast4<T>(mtl_tex::gather<mtl_tex::sampled_t<T>>(*mtl_d, s.mtl_a, p.x, p.y, clamped(element), offset.x, offset.y, 0u, &compare_value));
  }
  METAL_FUNC unsigned get_array_size() const { return mtl_d->array_length; }

 private:
  METAL_FUNC unsigned clamped(unsigned element) const { return mtl_tex::clamped_element(*mtl_d, element, 1u); }
  METAL_FUNC T at(sampler s, const vec<float, 2>& p, unsigned element, const vec<int, 2>& offset, float lod,
                  const float* ref) const {
    return mtl_tex::cvt<T>(
        mtl_tex::sample(*mtl_d, s.mtl_a, 2, p.x, p.y, 0.0f, clamped(element), offset.x, offset.y, 0, lod, ref).x);
  }
};

// depthcube (one cube, `first` 0) and depthcube_array (element e: slices 6e..6e+5) in one.
template <class T, bool Arrayed> struct mtl_depth_cube : mtl_texture_base {
  using mtl_texture_base::mtl_texture_base;

 protected:
  METAL_FUNC unsigned first(unsigned element) const {
    return Arrayed ? 6u * mtl_tex::clamped_element(*mtl_d, element, 6u) : 0u;
  }
  METAL_FUNC unsigned slice(unsigned face, unsigned element) const { return face < 6u ? element * 6u + face : ~0u; }
  METAL_FUNC T at(sampler s, const vec<float, 3>& dir, unsigned element, float lod, const float* ref) const {
    return mtl_tex::cvt<T>(mtl_tex::sample_cube(*mtl_d, s.mtl_a, dir, first(element), lod, ref).x);
  }
  METAL_FUNC vec<T, 4> four(sampler s, const vec<float, 3>& dir, unsigned element, const float* ref) const {
    return mtl_tex::cast4<T>(mtl_tex::gather_cube<mtl_tex::sampled_t<T>>(*mtl_d, s.mtl_a, dir, first(element), 0u, ref));
  }
};

template <class T, access A = access::sample, memory_coherence mtl_coherence = memory_coherence_threadgroup>
struct depthcube : mtl_depth_cube<T, false> {
  using mtl_depth_cube<T, false>::mtl_depth_cube;
  template <class U> METAL_FUNC T read(const vec<U, 2>& p, unsigned face, unsigned lod = 0) const {
    return mtl_tex::read<T>(*this->mtl_d, lod, unsigned(p.x), unsigned(p.y), this->slice(face, 0u)).x;
  }
  template <class U> METAL_FUNC void write(T v, const vec<U, 2>& p, unsigned face, unsigned lod = 0) const {
    mtl_tex::write<T>(*this->mtl_d, lod, vec<T, 4>(v, T(0), T(0), T(1)), unsigned(p.x), unsigned(p.y), this->slice(face, 0u));
  }
  METAL_FUNC T sample(sampler s, const vec<float, 3>& dir) const { return this->at(s, dir, 0u, 0.0f, nullptr); }
  METAL_FUNC T sample(sampler s, const vec<float, 3>& dir, level l) const { return this->at(s, dir, 0u, l.lod, nullptr); }
  METAL_FUNC T sample(sampler s, const vec<float, 3>& dir, bias b) const { return this->at(s, dir, 0u, b.value, nullptr); }
  METAL_FUNC T sample_compare(sampler s, const vec<float, 3>& dir, float compare_value) const {
    return this->at(s, dir, 0u, 0.0f, &compare_value);
  }
  METAL_FUNC T sample_compare(sampler s, const vec<float, 3>& dir, float compare_value, level l) const {
    return this->at(s, dir, 0u, l.lod, &compare_value);
  }
  METAL_FUNC vec<T, 4> gather(sampler s, const vec<float, 3>& dir) const { return this->four(s, dir, 0u, nullptr); }
  METAL_FUNC vec<T, 4> gather_compare(sampler s, const vec<float, 3>& dir, float compare_value) const {
    return this->four(s, dir, 0u, &compare_value);
  }
};

template <class T, access A = access::sample, memory_coherence mtl_coherence = memory_coherence_threadgroup>
struct depthcube_array : mtl_depth_cube<T, true> {
  using mtl_depth_cube<T, true>::mtl_depth_cube;
  template <class U> METAL_FUNC T read(const vec<U, 2>& p, unsigned face, unsigned element, unsigned lod = 0) const {
    return mtl_tex::read<T>(*this->mtl_d, lod, unsigned(p.x), unsigned(p.y), this->slice(face, element)).x;
  }
  template <class U>
  METAL_FUNC void write(T v, const vec<U, 2>& p, unsigned face, unsigned element, unsigned lod = 0) const {
    mtl_tex::write<T>(*this->mtl_d, lod, vec<T, 4>(v, T(0), T(0), T(1)), unsigned(p.x), unsigned(p.y),
                      this->slice(face, element));
  }
  METAL_FUNC T sample(sampler s, const vec<float, 3>& dir, unsigned element) const {
    return this->at(s, dir, element, 0.0f, nullptr);
  }
  METAL_FUNC T sample(sampler s, const vec<float, 3>& dir, unsigned element, level l) const {
    return this->at(s, dir, element, l.lod, nullptr);
  }
  METAL_FUNC T sample(sampler s, const vec<float, 3>& dir, unsigned element, bias b) const {
    return this->at(s, dir, element, b.value, nullptr);
  }
  METAL_FUNC T sample_compare(sampler s, const vec<float, 3>& dir, unsigned element, float compare_value) const {
    return this->at(s, dir, element, 0.0f, &compare_value);
  }
  METAL_FUNC T sample_compare(sampler s, const vec<float, 3>& dir, unsigned element, float compare_value, level l) const {
    return this->at(s, dir, element, l.lod, &compare_value);
  }
  METAL_FUNC vec<T, 4> gather(sampler s, const vec<float, 3>& dir, unsigned element) const {
    return this->four(s, dir, element, nullptr);
  }
  METAL_FUNC vec<T, 4> gather_compare(sampler s, const vec<float, 3>& dir, unsigned element, float compare_value) const {
    return this->four(s, dir, element, &compare_value);
  }
  METAL_FUNC unsigned get_array_size() const { return this->mtl_d->array_length / 6u; }
};

}  // namespace metal
