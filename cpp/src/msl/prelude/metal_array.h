// metalcall MSL prelude: metal::array<T, N>, MSL's fixed-size array (an aggregate,
// so `array<float, 4> w = {…};` works as in MSL), and array_ref<T>, a read-only view of
// an array (a function parameter that takes arrays of any length: textures, samplers...).
#pragma once

namespace metal {

template <class T, size_t N> struct array {
  T mtl_elements[N ? N : 1];

  METAL_FUNC constexpr size_t size() const { return N; }
  METAL_FUNC constexpr bool empty() const { return N == 0; }
  METAL_FUNC T& operator[](size_t i) { return METAL_CHECKED_ELEMENT(mtl_elements, i, N, "metal::array"); }
  METAL_FUNC constexpr const T& operator[](size_t i) const {
    return METAL_CHECKED_ELEMENT(mtl_elements, i, N, "metal::array");
  }
  METAL_FUNC T& front() { return METAL_CHECKED_ELEMENT(mtl_elements, 0, N, "metal::array"); }
  METAL_FUNC T& back() { return METAL_CHECKED_ELEMENT(mtl_elements, (long long)N - 1, N, "metal::array"); }
  // Checked mode: checked pointers over the elements (METAL_CHECKED_RANGE).
  METAL_FUNC METAL_RANGE_POINTER(T) data() { return METAL_CHECKED_RANGE(mtl_elements, N, "metal::array"); }
  METAL_FUNC METAL_RANGE_POINTER(const T) data() const { return METAL_CHECKED_RANGE(mtl_elements, N, "metal::array"); }
  METAL_FUNC METAL_RANGE_POINTER(T) begin() { return data(); }
  METAL_FUNC METAL_RANGE_POINTER(T) end() { return data() + N; }
  METAL_FUNC METAL_RANGE_POINTER(const T) begin() const { return data(); }
  METAL_FUNC METAL_RANGE_POINTER(const T) end() const { return data() + N; }
};

template <class T> struct array_ref {
  const T* mtl_data = nullptr;
  size_t mtl_size = 0;

  constexpr array_ref() = default;
  METAL_FUNC constexpr array_ref(const T& one) : mtl_data(&one), mtl_size(1) {}
  METAL_FUNC constexpr array_ref(const T* p, size_t n) : mtl_data(p), mtl_size(n) {}
  METAL_FUNC constexpr array_ref(const T* first, const T* last) : mtl_data(first), mtl_size(size_t(last - first)) {}
  template <size_t N> METAL_FUNC constexpr array_ref(const T (&a)[N]) : mtl_data(a), mtl_size(N) {}
  template <size_t N> METAL_FUNC constexpr array_ref(const array<T, N>& a) : mtl_data(a.mtl_elements), mtl_size(N) {}

  METAL_FUNC constexpr size_t size() const { return mtl_size; }
  METAL_FUNC constexpr bool empty() const { return mtl_size == 0; }
  METAL_FUNC constexpr const T& operator[](size_t i) const {
    return METAL_CHECKED_ELEMENT(mtl_data, i, mtl_size, "metal::array_ref");
  }
  METAL_FUNC constexpr const T& front() const { return METAL_CHECKED_ELEMENT(mtl_data, 0, mtl_size, "metal::array_ref"); }
  METAL_FUNC constexpr const T& back() const {
    return METAL_CHECKED_ELEMENT(mtl_data, (long long)mtl_size - 1, mtl_size, "metal::array_ref");
  }
  METAL_FUNC constexpr METAL_RANGE_POINTER(const T) data() const {
    return METAL_CHECKED_RANGE(mtl_data, mtl_size, "metal::array_ref");
  }
  METAL_FUNC constexpr METAL_RANGE_POINTER(const T) begin() const { return data(); }
  METAL_FUNC constexpr METAL_RANGE_POINTER(const T) end() const { return data() + mtl_size; }
};

template <class T, size_t N> METAL_FUNC constexpr array_ref<T> make_array_ref(const array<T, N>& a) { return a; }
template <class T, size_t N> METAL_FUNC constexpr array_ref<T> make_array_ref(const T (&a)[N]) { return a; }
template <class T> METAL_FUNC constexpr array_ref<T> make_array_ref(const T* p, size_t n) { return array_ref<T>(p, n); }

}  // namespace metal
