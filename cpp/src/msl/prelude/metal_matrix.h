// metalcall MSL prelude: matrices. matrix<T, C, R> (MSL's floatCxR, halfCxR)
// is C columns of vec<T, R>, so float3x3 is 48 bytes like in MSL.
#pragma once
#include "metal_geometric.h"
#include "metal_relational.h"

namespace metal {

template <class T, int C, int R> struct matrix;

template <class T, int C, int R> struct matrix {
  static_assert(C >= 2 && C <= 4 && R >= 2 && R <= 4, "MSL matrices are 2x2 to 4x4");
  typedef vec<T, R> column_type;
  column_type columns[C];

  matrix() = default;

  // float4x4(s): s on the diagonal, 0 elsewhere.
  template <class U, enable_if_t<mtl_detail::is_scalar<U>::value, int> = 0>
  METAL_FUNC constexpr explicit matrix(const U& s)
      : matrix(diagonal_tag{}, typename mtl_detail::make_seq<C>::type{}, mtl_detail::convert<T>(s)) {}

  // float3x3(c0, c1, c2) from columns, or C*R scalars in column-major order
  // (or any mix whose components add up to C*R).
  template <class A0, class A1, class... A,
            enable_if_t<mtl_detail::total_size<A0, A1, A...>::value == C * R, int> = 0>
  METAL_FUNC constexpr matrix(const A0& a0, const A1& a1, const A&... a)
      : matrix(mtl_detail::flatten_tag{}, typename mtl_detail::make_seq<C>::type{}, a0, a1, a...) {}

  // Columns as braced lists, half3x3({1, 2, 1}, {2, 4, 2}, {1, 2, 1}), which the template
  // above cannot deduce: one constructor per column count, taking column_type itself.
  template <int N = C, enable_if_t<N == 2, int> = 0>
  METAL_FUNC constexpr matrix(const column_type& c0, const column_type& c1) : columns{c0, c1} {}
  template <int N = C, enable_if_t<N == 3, int> = 0>
  METAL_FUNC constexpr matrix(const column_type& c0, const column_type& c1, const column_type& c2)
      : columns{c0, c1, c2} {}
  template <int N = C, enable_if_t<N == 4, int> = 0>
  METAL_FUNC constexpr matrix(const column_type& c0, const column_type& c1, const column_type& c2,
                              const column_type& c3)
      : columns{c0, c1, c2, c3} {}

  // half4x4(float4x4): explicit, like vector conversions.
  template <class U, enable_if_t<!is_same<U, T>::value, int> = 0>
  METAL_FUNC constexpr explicit matrix(const matrix<U, C, R>& m)
      : matrix(convert_tag{}, typename mtl_detail::make_seq<C>::type{}, m) {}

  METAL_FUNC column_type& operator[](int i) { return METAL_CHECKED_ELEMENT(columns, i, C, "matrix column"); }
  METAL_FUNC constexpr const column_type& operator[](int i) const {
    return METAL_CHECKED_ELEMENT(columns, i, C, "matrix column");
  }

  METAL_FUNC matrix& operator+=(const matrix& o) { return *this = *this + o; }
  METAL_FUNC matrix& operator-=(const matrix& o) { return *this = *this - o; }
  METAL_FUNC matrix& operator*=(const matrix<T, C, C>& o) { return *this = *this * o; }
  template <class U, enable_if_t<mtl_detail::is_scalar<U>::value, int> = 0>
  METAL_FUNC matrix& operator*=(const U& s) { return *this = *this * s; }

 private:
  struct diagonal_tag {};
  struct convert_tag {};
  template <int... c>
  METAL_FUNC constexpr matrix(diagonal_tag, mtl_detail::int_seq<c...>, const T& s)
      : columns{diagonal_column<c>(typename mtl_detail::make_seq<R>::type{}, s)...} {}
  template <int... c, class... A>
  METAL_FUNC constexpr matrix(mtl_detail::flatten_tag, mtl_detail::int_seq<c...>, const A&... a)
      : columns{column_from<c>(typename mtl_detail::make_seq<R>::type{}, a...)...} {}
  template <int... c, class U>
  METAL_FUNC constexpr matrix(convert_tag, mtl_detail::int_seq<c...>, const matrix<U, C, R>& m)
      : columns{column_type(m.columns[c])...} {}

  template <int c, int... r>
  static METAL_FUNC constexpr column_type diagonal_column(mtl_detail::int_seq<r...>, const T& s) {
    return column_type(mtl_detail::elems_tag{}, (r == c ? s : T(0))...);
  }
  template <int c, int... r, class... A>
  static METAL_FUNC constexpr column_type column_from(mtl_detail::int_seq<r...>, const A&... a) {
    return column_type(mtl_detail::elems_tag{}, mtl_detail::convert<T>(mtl_detail::pick<c * R + r>(a...))...);
  }
};

namespace mtl_detail {
template <class T, int C, int R, class F, int... c>
METAL_FUNC matrix<T, C, R> map_columns(const F& f, int_seq<c...>) {
  matrix<T, C, R> m;
  ((m.columns[c] = f(c)), ...);
  return m;
}
template <class T, int C, int R, class F> METAL_FUNC matrix<T, C, R> map_columns(const F& f) {
  return map_columns<T, C, R>(f, typename make_seq<C>::type{});
}
template <class T, int C, int R, bool P, int... c>
METAL_FUNC vec<T, R> mat_vec(const matrix<T, C, R>& m, const mtl_vector<T, C, P>& v, int_seq<c...>) {
  return ((m.columns[c] * elem<c>(v)) + ...);
}
template <class T, int C, int R, bool P, int... c>
METAL_FUNC vec<T, C> vec_mat(const mtl_vector<T, R, P>& v, const matrix<T, C, R>& m, int_seq<c...>) {
  return vec<T, C>(elems_tag{}, metal::dot(v, m.columns[c])...);
}
template <class T, int C, int R, int... c>
METAL_FUNC vec<T, C> matrix_row(const matrix<T, C, R>& m, int r, int_seq<c...>) {
  return vec<T, C>(elems_tag{}, m.columns[c][r]...);
}
}  // namespace mtl_detail

template <class T, int C, int R>
METAL_FUNC matrix<T, C, R> operator+(const matrix<T, C, R>& a, const matrix<T, C, R>& b) {
  return mtl_detail::map_columns<T, C, R>([&](int c) { return a.columns[c] + b.columns[c]; });
}
template <class T, int C, int R>
METAL_FUNC matrix<T, C, R> operator-(const matrix<T, C, R>& a, const matrix<T, C, R>& b) {
  return mtl_detail::map_columns<T, C, R>([&](int c) { return a.columns[c] - b.columns[c]; });
}
template <class T, int C, int R> METAL_FUNC matrix<T, C, R> operator-(const matrix<T, C, R>& a) {
  return mtl_detail::map_columns<T, C, R>([&](int c) { return -a.columns[c]; });
}
template <class T, int C, int R, class U, enable_if_t<mtl_detail::is_scalar<U>::value, int> = 0>
METAL_FUNC matrix<T, C, R> operator*(const matrix<T, C, R>& a, const U& s) {
  const T t = mtl_detail::convert<T>(s);
  return mtl_detail::map_columns<T, C, R>([&](int c) { return a.columns[c] * t; });
}
template <class T, int C, int R, class U, enable_if_t<mtl_detail::is_scalar<U>::value, int> = 0>
METAL_FUNC matrix<T, C, R> operator*(const U& s, const matrix<T, C, R>& a) {
  return a * s;
}
template <class T, int C, int R, class U, enable_if_t<mtl_detail::is_scalar<U>::value, int> = 0>
METAL_FUNC matrix<T, C, R> operator/(const matrix<T, C, R>& a, const U& s) {
  const T t = mtl_detail::convert<T>(s);
  return mtl_detail::map_columns<T, C, R>([&](int c) { return a.columns[c] / t; });
}
// m * v: linear combination of the columns.
template <class T, int C, int R, bool P>
METAL_FUNC vec<T, R> operator*(const matrix<T, C, R>& m, const mtl_vector<T, C, P>& v) {
  return mtl_detail::mat_vec(m, v, typename mtl_detail::make_seq<C>::type{});
}
// v * m: the row vector times m, i.e. dot(v, column) per column.
template <class T, int C, int R, bool P>
METAL_FUNC vec<T, C> operator*(const mtl_vector<T, R, P>& v, const matrix<T, C, R>& m) {
  return mtl_detail::vec_mat(v, m, typename mtl_detail::make_seq<C>::type{});
}
template <class T, int K, int C, int R>
METAL_FUNC matrix<T, C, R> operator*(const matrix<T, K, R>& a, const matrix<T, C, K>& b) {
  return mtl_detail::map_columns<T, C, R>([&](int c) { return a * b.columns[c]; });
}
template <class T, int C, int R> METAL_FUNC bool operator==(const matrix<T, C, R>& a, const matrix<T, C, R>& b) {
  for (int c = 0; c < C; ++c)
    if (!all(a.columns[c] == b.columns[c])) return false;
  return true;
}
template <class T, int C, int R> METAL_FUNC bool operator!=(const matrix<T, C, R>& a, const matrix<T, C, R>& b) {
  return !(a == b);
}

template <class T, int C, int R> METAL_FUNC matrix<T, R, C> transpose(const matrix<T, C, R>& m) {
  return mtl_detail::map_columns<T, R, C>(
      [&](int r) { return mtl_detail::matrix_row(m, r, typename mtl_detail::make_seq<C>::type{}); });
}

template <class T> METAL_FUNC T determinant(const matrix<T, 2, 2>& m) {
  return T(m[0][0] * m[1][1] - m[1][0] * m[0][1]);
}
template <class T> METAL_FUNC T determinant(const matrix<T, 3, 3>& m) {
  return metal::dot(m[0], metal::cross(m[1], m[2]));
}
template <class T> METAL_FUNC T determinant(const matrix<T, 4, 4>& m) {
  // Laplace expansion along the first column, with shared 2x2 minors of columns 2, 3.
  const T a = m[0][0], b = m[1][0], c = m[2][0], d = m[3][0];
  const T e = m[0][1], f = m[1][1], g = m[2][1], h = m[3][1];
  const T i = m[0][2], j = m[1][2], k = m[2][2], l = m[3][2];
  const T n = m[0][3], o = m[1][3], p = m[2][3], q = m[3][3];
  const T kq_lp = T(k * q - l * p), jq_lo = T(j * q - l * o), jp_ko = T(j * p - k * o);
  const T iq_ln = T(i * q - l * n), ip_kn = T(i * p - k * n), io_jn = T(i * o - j * n);
  return T(a * (f * kq_lp - g * jq_lo + h * jp_ko) - b * (e * kq_lp - g * iq_ln + h * ip_kn) +
           c * (e * jq_lo - f * iq_ln + h * io_jn) - d * (e * jp_ko - f * ip_kn + g * io_jn));
}

#define METAL_MATRIX_NAMES(S, T)                                                        \
  typedef matrix<T, 2, 2> mtl_##S##2x2; typedef matrix<T, 2, 3> mtl_##S##2x3;           \
  typedef matrix<T, 2, 4> mtl_##S##2x4; typedef matrix<T, 3, 2> mtl_##S##3x2;           \
  typedef matrix<T, 3, 3> mtl_##S##3x3; typedef matrix<T, 3, 4> mtl_##S##3x4;           \
  typedef matrix<T, 4, 2> mtl_##S##4x2; typedef matrix<T, 4, 3> mtl_##S##4x3;           \
  typedef matrix<T, 4, 4> mtl_##S##4x4;
METAL_MATRIX_NAMES(float, float)
METAL_MATRIX_NAMES(half, mtl_half)
#undef METAL_MATRIX_NAMES
}  // namespace metal

#define METAL_GLOBAL_MATRIX_NAMES(S)                                                    \
  using metal::mtl_##S##2x2; using metal::mtl_##S##2x3; using metal::mtl_##S##2x4;      \
  using metal::mtl_##S##3x2; using metal::mtl_##S##3x3; using metal::mtl_##S##3x4;      \
  using metal::mtl_##S##4x2; using metal::mtl_##S##4x3; using metal::mtl_##S##4x4;
METAL_GLOBAL_MATRIX_NAMES(float)
METAL_GLOBAL_MATRIX_NAMES(half)
#undef METAL_GLOBAL_MATRIX_NAMES

static_assert(sizeof(mtl_float2x2) == 16 && alignof(mtl_float2x2) == 8, "float2x2 layout");
static_assert(sizeof(mtl_float3x3) == 48 && alignof(mtl_float3x3) == 16, "float3x3 layout");
static_assert(sizeof(mtl_float4x3) == 64 && alignof(mtl_float4x3) == 16, "float4x3 layout");
static_assert(sizeof(mtl_float4x4) == 64 && alignof(mtl_float4x4) == 16, "float4x4 layout");
static_assert(sizeof(mtl_half3x3) == 24 && alignof(mtl_half3x3) == 8, "half3x3 layout");
