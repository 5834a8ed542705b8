// metalcall MSL prelude: multisampled textures (texture2d_ms, texture2d_ms_array, depth2d_ms,
// depth2d_ms_array): read(coord, [element,] sample) and get_num_samples(). One mip level;
// sample s of element e is slice e * sample_count + s (core/texture.cpp lays them out so).
#pragma once

namespace metal {

// What the four types share: the slice of (element, sample); a sample past the last names none.
struct mtl_texture_ms_base : mtl_texture_base {
  using mtl_texture_base::mtl_texture_base;
  METAL_FUNC unsigned get_num_samples() const { return mtl_d->sample_count; }

 protected:
  METAL_FUNC unsigned slice(unsigned element, unsigned sample) const {
    return sample < mtl_d->sample_count ? element * mtl_d->sample_count + sample : ~0u;
  }
};

template <class T, access A = access::read, memory_coherence mtl_coherence = memory_coherence_threadgroup>
struct texture2d_ms : mtl_texture_ms_base {
  using mtl_texture_ms_base::mtl_texture_ms_base;
  template <class U> METAL_FUNC vec<T, 4> read(const vec<U, 2>& p, unsigned sample) const {
    return mtl_tex::read<T>(*mtl_d, 0u, unsigned(p.x), unsigned(p.y), slice(0u, sample));
  }
};

template <class T, access A = access::read, memory_coherence mtl_coherence = memory_coherence_threadgroup>
struct texture2d_ms_array : mtl_texture_ms_base {
  using mtl_texture_ms_base::mtl_texture_ms_base;
  template <class U> METAL_FUNC vec<T, 4> read(const vec<U, 2>& p, unsigned element, unsigned sample) const {
    return mtl_tex::read<T>(*mtl_d, 0u, unsigned(p.x), unsigned(p.y), slice(element, sample));
  }
  METAL_FUNC unsigned get_array_size() const { return mtl_d->array_length / mtl_d->sample_count; }
};

template <class T, access A = access::read, memory_coherence mtl_coherence = memory_coherence_threadgroup>
struct depth2d_ms : mtl_texture_ms_base {
  using mtl_texture_ms_base::mtl_texture_ms_base;
  template <class U> METAL_FUNC T read(const vec<U, 2>& p, unsigned sample) const {
    return mtl_tex::read<T>(*mtl_d, 0u, unsigned(p.x), unsigned(p.y), slice(0u, sample)).x;
  }
};

template <class T, access A = access::read, memory_coherence mtl_coherence = memory_coherence_threadgroup>
struct depth2d_ms_array : mtl_texture_ms_base {
  using mtl_texture_ms_base::mtl_texture_ms_base;
  template <class U> METAL_FUNC T read(const vec<U, 2>& p, unsigned element, unsigned sample) const {
    return mtl_tex::read<T>(*mtl_d, 0u, unsigned(p.x), unsigned(p.y), slice(element, sample)).x;
  }
  METAL_FUNC unsigned get_array_size() const { return mtl_d->array_length / mtl_d->sample_count; }
};

}  // namespace metal
