// metalcall MSL prelude: texels and sampling in software, by the rules of Metal's pixel
// formats and samplers (metal_texture.h's texture types call these).
#pragma once

#include "metal_texture_types.h"
#include "metal_texture_formats.h"

namespace metal {

namespace mtl_tex {

// No memcpy or builtins that NVRTC may lack: byte copies (folded into loads by the
// compiler), and the libm names of metal_math.h.
METAL_FUNC void copy_bytes(void* dst, const void* src, unsigned n) {
  for (unsigned i = 0; i < n; ++i) static_cast<unsigned char*>(dst)[i] = static_cast<const unsigned char*>(src)[i];
}
template <class To, class From> METAL_FUNC To cvt(const From& x) { return mtl_detail::convert_impl<To, From>::apply(x); }
template <class T, class F> METAL_FUNC vec<T, 4> cast4(const vec<F, 4>& v) {
  return vec<T, 4>(cvt<T>(v.x), cvt<T>(v.y), cvt<T>(v.z), cvt<T>(v.w));
}

enum kind { unorm = 0, snorm = 1, uint_ = 2, sint = 3, float_ = 4 };
METAL_FUNC unsigned channels(unsigned f) { return f & 15u; }
METAL_FUNC unsigned channel_bytes(unsigned f) { return (f >> 4) & 15u; }
METAL_FUNC unsigned format_kind(unsigned f) { return (f >> 8) & 15u; }
// metal_texture_formats.h's layout_kind: plain, BGRA byte order, or a packed 32-bit word (channels 1).
METAL_FUNC unsigned layout(unsigned f) { return (f >> 12) & 15u; }
METAL_FUNC bool is_srgb(unsigned f) { return ((f >> 16) & 1u) != 0u; }
METAL_FUNC bool has_alpha(unsigned f) { return layout(f) == rgb10a2 || (layout(f) < rgb10a2 && channels(f) == 4u); }
// Which field of the texel holds component i: BGRA stores blue first.
METAL_FUNC unsigned field_of(unsigned f, unsigned i) { return layout(f) == bgra && i < 3u ? 2u - i : i; }

// A size at mip level `lod`: halved per level, at least 1.
METAL_FUNC unsigned halved(unsigned n, unsigned lod) {
  n = lod < 32u ? n >> lod : 0u;
  return n ? n : 1u;
}

// One mip level of a texture: where its texels are, and its size.
struct level_view {
  unsigned char* data;
  unsigned long long row_pitch, slice_pitch;
  unsigned width, height, depth;
};
METAL_FUNC unsigned slices_at(const mtl_texture_abi& d, unsigned lod) {
  return d.type == 3u ? halved(d.depth, lod) : d.array_length;  // 3: metalcall::TextureType::texture3d
}
// Level `lod` (< d.mip_levels).
METAL_FUNC level_view level_of(const mtl_texture_abi& d, unsigned lod) {
  level_view l;
  l.data = static_cast<unsigned char*>(d.data) + d.level_offset[lod];
  l.row_pitch = d.level_row_pitch[lod];
  l.width = halved(d.width, lod);
  l.height = halved(d.height, lod);
  l.depth = halved(d.depth, lod);
  l.slice_pitch = l.row_pitch * l.height;
  return l;
}

METAL_FUNC unsigned char* texel(const level_view& l, unsigned format, unsigned x, unsigned y, unsigned slice) {
  return l.data + slice * l.slice_pitch + y * l.row_pitch + x * (unsigned long long)(channels(format) * channel_bytes(format));
}

// One channel as a float (unorm, snorm and float formats) by Metal's conversion rules.
METAL_FUNC float load_float(const unsigned char* p, unsigned f) {
  const unsigned k = format_kind(f), b = channel_bytes(f);
  if (k == float_) {
    if (b == 4) {
      float v;
      copy_bytes(&v, p, 4);
      return v;
    }
    mtl_half h;
    copy_bytes(&h, p, 2);
    return cvt<float>(h);
  }
  // c / (2^n - 1) correctly rounded to float whatever the kernel's fast-math flags (a float
  // division became a multiplication by a float reciprocal: 1 ulp off for 126 of the 256 unorm8
  // values), as a texture unit converts and as metal_pack.h's unpack functions promise. The
  // product with the reciprocal in double is within 2^-52 of c / m, and c / m (m odd) lies at
  // least 1/(2m) of a float ulp from any rounding midpoint, so one rounding to float is exact.
  if (k == unorm) {
    if (b == 1) return float(double(*p) * (1.0 / 255.0));
    unsigned short u;
    copy_bytes(&u, p, 2);
    return float(double(u) * (1.0 / 65535.0));
  }
  if (k == snorm) {
    // Metal: max(c / (2^(n-1) - 1), -1): both -128 and -127 map to -1.
    float v;
    if (b == 1) {
      v = float(double(*reinterpret_cast<const signed char*>(p)) * (1.0 / 127.0));
    } else {
      short s;
      copy_bytes(&s, p, 2);
      v = float(double(s) * (1.0 / 32767.0));
    }
    return v < -1.0f ? -1.0f : v;
  }
  return 0.0f;
}

// One channel as an integer (uint and sint formats).
METAL_FUNC long long load_int(const unsigned char* p, unsigned f) {
  const bool sgn = format_kind(f) == sint;
  switch (channel_bytes(f)) {
    case 1: return sgn ? (long long)*reinterpret_cast<const signed char*>(p) : (long long)*p;
    case 2: {
      unsigned short u;
      copy_bytes(&u, p, 2);
      return sgn ? (long long)(short)u : (long long)u;
    }
    default: {
      unsigned u;
      copy_bytes(&u, p, 4);
      return sgn ? (long long)(int)u : (long long)u;
    }
  }
}

METAL_FUNC bool is_integer(unsigned f) { return format_kind(f) == uint_ || format_kind(f) == sint; }

// A texel as 4 components; missing channels read as 0 (green, blue) and 1 (alpha). sRGB
// channels are linearised here, before any filtering, as Metal's texture units do.
template <class T> METAL_FUNC vec<T, 4> load(const unsigned char* p, unsigned f) {
  const unsigned n = channels(f), b = channel_bytes(f), lay = layout(f);
  if (lay >= rgb10a2) {
    unsigned w;
    copy_bytes(&w, p, 4);
    if (is_integer(f)) return vec<T, 4>(cvt<T>(word_field(w, 0)), cvt<T>(word_field(w, 1)), cvt<T>(word_field(w, 2)),
                                        cvt<T>(word_field(w, 3)));
    return cast4<T>(unpack_word(w, lay));
  }
  T c[4] = {cvt<T>(0), cvt<T>(0), cvt<T>(0), cvt<T>(1)};
  for (unsigned i = 0; i < n; ++i) {
    const unsigned char* q = p + field_of(f, i) * b;
    if (is_integer(f)) c[i] = cvt<T>(load_int(q, f));
    else if (is_srgb(f) && i < 3u) c[i] = cvt<T>(srgb_to_linear(*q));
    else c[i] = cvt<T>(load_float(q, f));
  }
  return vec<T, 4>(c[0], c[1], c[2], c[3]);
}

METAL_FUNC float clampf(float v, float lo, float hi) { return v != v ? 0.0f : v < lo ? lo : v > hi ? hi : v; }

// Stores one channel: normalized formats clamp and round to nearest even (Metal's
// float-to-normalized rule), integer formats saturate (Metal leaves overflow undefined).
METAL_FUNC void store_float(unsigned char* p, unsigned f, float v) {
  const unsigned k = format_kind(f), b = channel_bytes(f);
  if (k == float_) {
    if (b == 4) {
      copy_bytes(p, &v, 4);
    } else {
#if METAL_CUDA
      // One 16-bit store (channels of 16-bit formats are 2-byte aligned): NVRTC wrote a wrong
      // low byte (0 or 1) when the bits of a converted half were stored byte by byte.
      *reinterpret_cast<unsigned short*>(p) = __half_as_ushort(__float2half_rn(v));
#else
      const mtl_half h = cvt<mtl_half>(v);
      unsigned short bits;
      copy_bytes(&bits, &h, 2);
      copy_bytes(p, &bits, 2);
#endif
    }
  } else if (k == unorm) {
    const float m = b == 1 ? 255.0f : 65535.0f;
    const unsigned u = unsigned(METAL_LIBM(rint)(clampf(v, 0.0f, 1.0f) * m));
    if (b == 1) *p = (unsigned char)u;
    else {
      const unsigned short s = (unsigned short)u;
      copy_bytes(p, &s, 2);
    }
  } else if (k == snorm) {
    const float m = b == 1 ? 127.0f : 32767.0f;
    const int i = int(METAL_LIBM(rint)(clampf(v, -1.0f, 1.0f) * m));
    if (b == 1) *reinterpret_cast<signed char*>(p) = (signed char)i;
    else {
      const short s = (short)i;
      copy_bytes(p, &s, 2);
    }
  }
}

METAL_FUNC void store_int(unsigned char* p, unsigned f, long long v) {
  const bool sgn = format_kind(f) == sint;
  const unsigned b = channel_bytes(f);
  const long long hi = sgn ? (1ll << (8 * b - 1)) - 1 : (1ll << (8 * b)) - 1, lo = sgn ? -hi - 1 : 0;
  v = v < lo ? lo : v > hi ? hi : v;
  if (b == 1) *p = (unsigned char)v;
  else if (b == 2) {
    const unsigned short s = (unsigned short)v;
    copy_bytes(p, &s, 2);
  } else {
    const unsigned u = (unsigned)v;
    copy_bytes(p, &u, 4);
  }
}

template <class T> METAL_FUNC void store(unsigned char* p, unsigned f, const vec<T, 4>& c) {
  const unsigned n = channels(f), b = channel_bytes(f), lay = layout(f);
  const T v[4] = {c.x, c.y, c.z, c.w};
  if (lay >= rgb10a2) {
    unsigned w = 0;
    if (is_integer(f)) {
      for (unsigned i = 0; i < 4; ++i) w |= saturated_field(cvt<long long>(v[i]), i);
    } else {
      w = pack_word(vec<float, 4>(cvt<float>(v[0]), cvt<float>(v[1]), cvt<float>(v[2]), cvt<float>(v[3])), lay);
    }
#if METAL_CUDA
    // One 32-bit store (a packed texel is 4-byte aligned), as the half store above: NVRTC has
    // miscompiled computed bits stored byte by byte.
    *reinterpret_cast<unsigned*>(p) = w;
#else
    copy_bytes(p, &w, 4);
#endif
    return;
  }
  for (unsigned i = 0; i < n; ++i) {
    unsigned char* q = p + field_of(f, i) * b;
    if (is_integer(f)) store_int(q, f, cvt<long long>(v[i]));
    else if (is_srgb(f) && i < 3u) *q = (unsigned char)linear_to_srgb(cvt<float>(v[i]));
    else store_float(q, f, cvt<float>(v[i]));
  }
}

#if !METAL_CUDA
// Starts the fault message of a call on texture(binding) ("… texture(2)"); null when the launch
// already holds one (begin_fault, metal_sync.h). Its out/cap are the launch's.
METAL_FUNC const metalcall_cpu_launch* begin_texture_fault(unsigned& n, unsigned binding) {
  const metalcall_cpu_launch* L = mtl_rt::begin_fault(n);
  if (L) {
    mtl_rt::append(L->fault_message, L->fault_capacity, n, " texture(");
    mtl_rt::append_number(L->fault_message, L->fault_capacity, n, binding);
    mtl_rt::append(L->fault_message, L->fault_capacity, n, ")");
  }
  return L;
}
#endif

#if defined(METALCALL_CHECKED) && !METAL_CUDA
// `head` then "(a<sep>b<sep>c)" into a fault message.
METAL_FUNC void append_three(char* out, unsigned cap, unsigned& n, const char* head, unsigned a, unsigned b, unsigned c,
                             const char* sep) {
  mtl_rt::append(out, cap, n, head);
  mtl_rt::append_number(out, cap, n, a);
  mtl_rt::append(out, cap, n, sep);
  mtl_rt::append_number(out, cap, n, b);
  mtl_rt::append(out, cap, n, sep);
  mtl_rt::append_number(out, cap, n, c);
  mtl_rt::append(out, cap, n, ")");
}
#endif

// Out-of-range coordinates (or mip levels): Metal leaves them undefined; metalcall reads
// zeros and drops writes, and checked mode reports the first one as an ExecutionError.
METAL_FUNC bool in_range(const mtl_texture_abi& d, unsigned lod, unsigned x, unsigned y, unsigned z, const char* op) {
  const bool level_exists = lod < d.mip_levels;
  const unsigned w = halved(d.width, lod), h = halved(d.height, lod), slice_count = slices_at(d, lod);
  if (level_exists && x < w && y < h && z < slice_count) return true;
#if defined(METALCALL_CHECKED) && !METAL_CUDA
  unsigned n;
  if (const metalcall_cpu_launch* L = begin_texture_fault(n, d.binding)) {
    char* out = L->fault_message;
    const unsigned cap = L->fault_capacity;
    mtl_rt::append(out, cap, n, " ");
    mtl_rt::append(out, cap, n, op);
    append_three(out, cap, n, " at (", x, y, z, ", ");
    if (lod) {
      mtl_rt::append(out, cap, n, " of mip level ");
      mtl_rt::append_number(out, cap, n, lod);
    }
    if (!level_exists) {
      mtl_rt::append(out, cap, n, ": the texture has ");
      mtl_rt::append_number(out, cap, n, d.mip_levels);
      mtl_rt::append(out, cap, n, " mip level(s)");
    } else {
      append_three(out, cap, n, " is outside the texture (", w, h, slice_count, " x ");
    }
    out[n] = 0;
  }
#else
  (void)op;
#endif
  return false;
}

template <class T> METAL_FUNC vec<T, 4> read(const mtl_texture_abi& d, unsigned lod, unsigned x, unsigned y,
                                             unsigned slice) {
  if (!in_range(d, lod, x, y, slice, "read")) return vec<T, 4>(cvt<T>(0), cvt<T>(0), cvt<T>(0), cvt<T>(0));
  return load<T>(texel(level_of(d, lod), d.format, x, y, slice), d.format);
}

template <class T> METAL_FUNC void write(const mtl_texture_abi& d, unsigned lod, const vec<T, 4>& c, unsigned x,
                                         unsigned y, unsigned slice) {
  if (!in_range(d, lod, x, y, slice, "write")) return;
  store<T>(texel(level_of(d, lod), d.format, x, y, slice), d.format, c);
}

// A texel index after the address mode; -1: outside (clamp_to_zero / clamp_to_border).
METAL_FUNC int address_index(int i, int n, unsigned mode) {
  switch (mode) {
    case 2: return ((i % n) + n) % n;  // repeat
    case 3: {                          // mirrored_repeat
      const int m = ((i % (2 * n)) + 2 * n) % (2 * n);
      return m < n ? m : 2 * n - 1 - m;
    }
    case 1: {  // mirrored_clamp_to_edge: mirror once around 0, then clamp
      const int m = i < 0 ? -1 - i : i;
      return m >= n ? n - 1 : m;
    }
    case 4:
    case 5: return i < 0 || i >= n ? -1 : i;
    default: return i < 0 ? 0 : i >= n ? n - 1 : i;  // clamp_to_edge
  }
}

// What a texel outside the texture reads under clamp_to_zero / clamp_to_border.
METAL_FUNC vec<float, 4> border(const mtl_texture_abi& d, const mtl_sampler_abi& s, unsigned mode) {
  if (mode == 4) {  // transparent black, or opaque black for formats without alpha
    return vec<float, 4>(0.0f, 0.0f, 0.0f, has_alpha(d.format) ? 0.0f : 1.0f);
  }
  if (s.border == 2) return vec<float, 4>(1.0f, 1.0f, 1.0f, 1.0f);
  return vec<float, 4>(0.0f, 0.0f, 0.0f, s.border == 1 ? 1.0f : 0.0f);
}

// The texels and weights of one axis: coordinate c on an axis of n texels.
struct axis {
  int i[2];
  float w[2];
  int count;
};
// A floored texel coordinate as an int index for address_index: under repeat and
// mirrored_repeat first reduced modulo the period (fmod is exact), else clamped to +-2^30,
// beyond any texture, so that far coordinates (1e10, infinities) still read the edge or the
// border: converted directly they overflowed int (x86 gives INT_MIN: +1e10 read texel 0).
// A NaN (undefined on Metal) reads texel 0.
METAL_FUNC int texel_index(float f, int n, unsigned mode) {
  if (mode == 2 || mode == 3) f = METAL_LIBM(fmod)(f, float(mode == 2 ? n : 2 * n));
  if (f != f) return 0;
  const float far = 1073741824.0f;
  return int(f < -far ? -far : f > far ? far : f);
}
METAL_FUNC axis footprint(float c, int n, bool normalized, bool linear, int offset, unsigned mode) {
  float x = normalized ? c * float(n) : c;
  axis a;
  if (linear) {
    x -= 0.5f;
    const float f = METAL_LIBM(floor)(x);
    a.i[0] = texel_index(f, n, mode) + offset;
    a.i[1] = a.i[0] + 1;
    a.w[1] = x - f;
    if (!(a.w[1] >= 0.0f && a.w[1] < 1.0f)) a.w[1] = 0.0f;  // an infinite x: its edge texel alone
    a.w[0] = 1.0f - a.w[1];
    a.count = 2;
  } else {
    a.i[0] = a.i[1] = texel_index(METAL_LIBM(floor)(x), n, mode) + offset;
    a.w[0] = 1.0f;
    a.w[1] = 0.0f;
    a.count = 1;
  }
  return a;
}

// What sample() and gather() compute in: float, or for a texture of int/uint/short/ushort the
// texels' own integers (Metal cannot filter integer formats: they sample their nearest texel),
// so that 32-bit texels beyond 2^24 come back exactly rather than rounded through a float.
template <class T> struct sampled { using type = float; };
template <> struct sampled<int> { using type = int; };
template <> struct sampled<unsigned> { using type = unsigned; };
template <> struct sampled<short> { using type = short; };
template <> struct sampled<unsigned short> { using type = unsigned short; };
template <class T> using sampled_t = typename sampled<T>::type;
// Whether taps are filtered values (float), not an integer texture's texels (read in place, no seams).
template <class A> struct is_float_tap { static constexpr bool value = false; };
template <> struct is_float_tap<float> { static constexpr bool value = true; };
// One tap of the filter: weighted into the sum for float; an integer texture's one tap is the result.
METAL_FUNC void accumulate(vec<float, 4>& sum, const vec<float, 4>& t, float weight) { sum += t * weight; }
template <class A> METAL_FUNC void accumulate(vec<A, 4>& sum, const vec<A, 4>& t, float) { sum = t; }
METAL_FUNC vec<float, 4> blend(const vec<float, 4>& a, const vec<float, 4>& b, float f) { return a * (1.0f - f) + b * f; }
template <class A> METAL_FUNC vec<A, 4> blend(const vec<A, 4>& a, const vec<A, 4>&, float) { return a; }

// sample_compare: 1 where `ref` OP the texel's first component passes (compare_func), else 0.
// compare_func::none (Metal leaves sample_compare with it undefined) passes nothing.
METAL_FUNC float compared(unsigned func, float ref, float texel) {
  switch (func) {
    case 1: return ref < texel ? 1.0f : 0.0f;
    case 2: return ref <= texel ? 1.0f : 0.0f;
    case 3: return ref > texel ? 1.0f : 0.0f;
    case 4: return ref >= texel ? 1.0f : 0.0f;
    case 5: return ref == texel ? 1.0f : 0.0f;
    case 6: return ref != texel ? 1.0f : 0.0f;
    case 7: return 1.0f;
    default: return 0.0f;
  }
}

// Cube map: the face a direction points at and the 2-D coordinates on it (normalized).
METAL_FUNC unsigned cube_face(float x, float y, float z, float* u, float* v) {
  const float ax = METAL_LIBM(fabs)(x), ay = METAL_LIBM(fabs)(y), az = METAL_LIBM(fabs)(z);
  unsigned face;
  float sc, tc, ma;
  if (ax >= ay && ax >= az) {
    face = x >= 0 ? 0u : 1u, sc = x >= 0 ? -z : z, tc = -y, ma = ax;
  } else if (ay >= az) {
    face = y >= 0 ? 2u : 3u, sc = x, tc = y >= 0 ? z : -z, ma = ay;
  } else {
    face = z >= 0 ? 4u : 5u, sc = z >= 0 ? x : -x, tc = -y, ma = az;
  }
  *u = 0.5f * (sc / ma + 1.0f);
  *v = 0.5f * (tc / ma + 1.0f);
  return face;
}

// The direction of the point (sc, tc) of cube face `face` at distance `ma` along its axis (the
// inverse of cube_face's projection).
METAL_FUNC vec<float, 3> face_direction(unsigned face, float sc, float tc, float ma) {
  switch (face) {
    case 0: return vec<float, 3>(ma, -tc, -sc);
    case 1: return vec<float, 3>(-ma, -tc, sc);
    case 2: return vec<float, 3>(sc, ma, tc);
    case 3: return vec<float, 3>(sc, -ma, -tc);
    case 4: return vec<float, 3>(sc, -tc, ma);
    default: return vec<float, 3>(-sc, -tc, -ma);
  }
}
// Texel (i, j) of the cube face at `slice` (6 faces from a multiple of 6), one texel past one of its
// edges: seamless cube maps (Metal's, as Vulkan and WebGPU require of it) take it from the adjacent
// face, the texel whose centre lies that far inside it.
METAL_FUNC vec<float, 4> cube_edge_texel(const mtl_texture_abi& d, const level_view& l, int i, int j, unsigned slice) {
  const int n = int(l.width);
  const bool out_i = i < 0 || i >= n;
  float sc = 2.0f * (float(i) + 0.5f) / float(n) - 1.0f, tc = 2.0f * (float(j) + 0.5f) / float(n) - 1.0f;
  float& out = out_i ? sc : tc;
  // The excess past the edge becomes depth into the neighbour: the out-of-face coordinate lands on
  // the shared edge (+-1) and the face's own axis shrinks by the excess.
  const float ma = 2.0f - (out < 0.0f ? -out : out);
  out = out < 0.0f ? -1.0f : 1.0f;
  const vec<float, 3> dir = face_direction(slice % 6u, sc, tc, ma);
  float u, v;
  const unsigned face = cube_face(dir.x, dir.y, dir.z, &u, &v);
  const int ni = int(METAL_LIBM(floor)(u * float(n))), nj = int(METAL_LIBM(floor)(v * float(n)));
  return load<float>(texel(l, d.format, unsigned(ni < 0 ? 0 : ni >= n ? n - 1 : ni),
                           unsigned(nj < 0 ? 0 : nj >= n ? n - 1 : nj), slice - slice % 6u + face), d.format);
}
// Any tap of a cube face's linear footprint: on the face, past one edge (cube_edge_texel), or past a
// corner, where no texel is: the mean of the three that meet there (OpenGL's seamless rule).
METAL_FUNC vec<float, 4> cube_texel(const mtl_texture_abi& d, const level_view& l, int i, int j, unsigned slice) {
  const int n = int(l.width);
  const bool out_i = i < 0 || i >= n, out_j = j < 0 || j >= n;
  const int ci = i < 0 ? 0 : i >= n ? n - 1 : i, cj = j < 0 ? 0 : j >= n ? n - 1 : j;
  const vec<float, 4> own = load<float>(texel(l, d.format, unsigned(ci), unsigned(cj), slice), d.format);
  if (out_i && out_j)
    return (own + cube_edge_texel(d, l, i, cj, slice) + cube_edge_texel(d, l, ci, j, slice)) / 3.0f;
  return out_i || out_j ? cube_edge_texel(d, l, i, j, slice) : own;
}

// Samples one mip level, slice `slice`, at (u, v, w) over `dims` axes: the software sampler.
// With `ref`, each texel is first replaced by its comparison with *ref (sample_compare).
template <class A>
METAL_FUNC vec<A, 4> sample_level(const mtl_texture_abi& d, const level_view& l, const mtl_sampler_abi& s,
                                  bool linear, unsigned dims, float u, float v, float w, unsigned slice, int ox,
                                  int oy, int oz, const float* ref, bool cube = false) {
  const bool normalized = s.normalized != 0;
  const int size[3] = {int(l.width), int(l.height), int(l.depth)};
  const unsigned modes[3] = {s.s, s.t, s.r};
  const axis ax[3] = {footprint(u, size[0], normalized, linear, ox, modes[0]),
                      dims > 1 ? footprint(v, size[1], normalized, linear, oy, modes[1]) : axis{{0, 0}, {1.0f, 0.0f}, 1},
                      dims > 2 ? footprint(w, size[2], normalized, linear, oz, modes[2]) : axis{{0, 0}, {1.0f, 0.0f}, 1}};
  vec<A, 4> sum(cvt<A>(0));
  for (int c = 0; c < ax[2].count; ++c)
    for (int b = 0; b < ax[1].count; ++b)
      for (int a = 0; a < ax[0].count; ++a) {
        const float weight = ax[0].w[a] * ax[1].w[b] * ax[2].w[c];
        const int idx[3] = {ax[0].i[a], ax[1].i[b], ax[2].i[c]};
        int at[3] = {0, 0, 0};
        bool outside = false;
        unsigned outside_mode = 0;
        for (unsigned k = 0; k < dims; ++k) {
          at[k] = address_index(idx[k], size[k], modes[k]);
          if (at[k] < 0) outside = true, outside_mode = modes[k];
        }
        const bool off_face = cube && linear && (idx[0] != at[0] || idx[1] != at[1]);  // seamless cube maps
        vec<A, 4> t = off_face  ? cast4<A>(cube_texel(d, l, idx[0], idx[1], slice))
                      : outside ? cast4<A>(border(d, s, outside_mode))
                                : load<A>(texel(l, d.format, unsigned(at[0]), unsigned(at[1]),
                                                dims > 2 ? unsigned(at[2]) : slice), d.format);
        if (ref) t = vec<A, 4>(cvt<A>(compared(s.compare, *ref, cvt<float>(t.x))));
        accumulate(sum, t, weight);
      }
  return sum;
}

// The LOD of a footprint with these derivatives (normalized or pixel coordinates, as the
// sampler's): log2 of the longer one in texels of level 0 (isotropic filtering).
METAL_FUNC float gradient_lod(const mtl_texture_abi& d, const mtl_sampler_abi& s, const vec<float, 3>& dx,
                              const vec<float, 3>& dy) {
  const vec<float, 3> scale = s.normalized ? vec<float, 3>(float(d.width), float(d.height), float(d.depth))
                                           : vec<float, 3>(1.0f, 1.0f, 1.0f);
  const vec<float, 3> a = dx * scale, b = dy * scale;
  const float la = a.x * a.x + a.y * a.y + a.z * a.z, lb = b.x * b.x + b.y * b.y + b.z * b.z;
  return 0.5f * METAL_LIBM(log2)(la > lb ? la : lb);
}

// Samples slice `slice` at (u, v, w) over `dims` axes at LOD `lod`: the sampler's LOD
// clamps, then (LOD > 0: minification) the min filter on the level(s) its mip filter
// picks — none: level 0; nearest: the nearest level; linear: the two around the LOD,
// blended — or (LOD <= 0: magnification) the mag filter on level 0.
// A: sampled_t of the texture's T (integer formats sample their nearest texel of the nearest level).
template <class A = float>
METAL_FUNC vec<A, 4> sample(const mtl_texture_abi& d, const mtl_sampler_abi& s, unsigned dims, float u, float v,
                            float w, unsigned slice, int ox = 0, int oy = 0, int oz = 0, float lod = 0.0f,
                            const float* ref = nullptr, bool cube = false) {
  if (lod != lod) lod = 0.0f;
  lod = lod < s.lod_min ? s.lod_min : lod > s.lod_max ? s.lod_max : lod;
  const bool minified = lod > 0.0f;
  const bool filtered = !is_integer(d.format);
  const bool linear = filtered && (minified ? s.min : s.mag) == 1;
  const unsigned mip = !filtered && s.mip == 2 ? 1u : s.mip;
  const unsigned last = d.mip_levels > 1 ? d.mip_levels - 1 : 0u;
  unsigned level = 0;
  float fraction = 0.0f;  // of level + 1, with mip_filter::linear
  if (minified && mip == 1) {
    level = lod <= 0.5f ? 0u : unsigned(METAL_LIBM(ceil)(lod + 0.5f)) - 1u;
  } else if (minified && mip == 2) {
    const float whole = METAL_LIBM(floor)(lod);
    level = whole >= float(last) ? last : unsigned(whole);
    fraction = whole >= float(last) ? 0.0f : lod - whole;
  }
  if (level > last) level = last;
  const vec<A, 4> a = sample_level<A>(d, level_of(d, level), s, linear, dims, u, v, w, slice, ox, oy, oz, ref, cube);
  if (fraction == 0.0f) return a;
  const vec<A, 4> b = sample_level<A>(d, level_of(d, level + 1), s, linear, dims, u, v, w, slice, ox, oy, oz, ref, cube);
  return blend(a, b, fraction);
}

// The 2x2 texels that linear filtering at (u, v) on level 0 would blend, component `c`
// of each, in Metal's order: (i0, j1), (i1, j1), (i1, j0), (i0, j0); with `ref`, their
// comparisons with *ref (gather_compare).
template <class A = float>
METAL_FUNC vec<A, 4> gather(const mtl_texture_abi& d, const mtl_sampler_abi& s, float u, float v, unsigned slice,
                            int ox, int oy, unsigned c, const float* ref = nullptr, bool cube = false) {
  const bool normalized = s.normalized != 0;
  const level_view l = level_of(d, 0);
  const axis x = footprint(u, int(d.width), normalized, true, ox, s.s),
             y = footprint(v, int(d.height), normalized, true, oy, s.t);
  A out[4];
  const int corners[4][2] = {{0, 1}, {1, 1}, {1, 0}, {0, 0}};
  for (int k = 0; k < 4; ++k) {
    const int ix = address_index(x.i[corners[k][0]], int(d.width), s.s);
    const int iy = address_index(y.i[corners[k][1]], int(d.height), s.t);
    const int i = x.i[corners[k][0]], j = y.i[corners[k][1]];
    const bool off_face = cube && is_float_tap<A>::value && (i != ix || j != iy);  // seamless cube maps
    const vec<A, 4> t = off_face                 ? cast4<A>(cube_texel(d, l, i, j, slice))
                        : ix < 0 || iy < 0 ? cast4<A>(border(d, s, ix < 0 ? s.s : s.t))
                                           : load<A>(texel(l, d.format, unsigned(ix), unsigned(iy), slice), d.format);
    out[k] = ref ? cvt<A>(compared(s.compare, *ref, cvt<float>(t.x))) : t[c];
  }
  return vec<A, 4>(out[0], out[1], out[2], out[3]);
}

// A cube face's own coordinates are clamped to its edge (normalized); taps past it come from the
// adjacent face (cube_texel).
METAL_FUNC mtl_sampler_abi mtl_face_edge(const mtl_sampler_abi& s) {
  mtl_sampler_abi edge = s;
  edge.s = edge.t = 0;
  edge.normalized = 1;
  return edge;
}

// A cube of slices first..first+5 sampled along a direction: the face it points at (mtl_face_edge).
// With `ref`: sample_compare.
template <class A = float>
METAL_FUNC vec<A, 4> sample_cube(const mtl_texture_abi& d, const mtl_sampler_abi& s, const vec<float, 3>& dir,
                                 unsigned first, float lod, const float* ref = nullptr) {
  float u, v;
  const unsigned face = cube_face(dir.x, dir.y, dir.z, &u, &v);
  return sample<A>(d, mtl_face_edge(s), 2, u, v, 0.0f, first + face, 0, 0, 0, lod, ref, true);
}
template <class A = float>
METAL_FUNC vec<A, 4> gather_cube(const mtl_texture_abi& d, const mtl_sampler_abi& s, const vec<float, 3>& dir,
                                 unsigned first, unsigned c, const float* ref = nullptr) {
  float u, v;
  const unsigned face = cube_face(dir.x, dir.y, dir.z, &u, &v);
  return gather<A>(d, mtl_face_edge(s), u, v, first + face, 0, 0, c, ref, true);
}
// Metal clamps the array index of sample and gather to the last element (`per` slices each).
METAL_FUNC unsigned clamped_element(const mtl_texture_abi& d, unsigned element, unsigned per) {
  const unsigned n = d.array_length / per;
  return n == 0 ? 0u : element >= n ? n - 1 : element;
}

}  // namespace mtl_tex

}  // namespace metal
