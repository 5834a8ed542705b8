// metalcall MSL prelude: metal::array<T, N>, MSL's fixed-size array (an aggregate,
// so `array<float, 4> w = {…};` works as in MSL).
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
  METAL_FUNC T& front() { return mtl_elements[0]; }
  METAL_FUNC T& back() { return mtl_elements[N - 1]; }
  METAL_FUNC T* data() { return mtl_elements; }
  METAL_FUNC const T* data() const { return mtl_elements; }
  METAL_FUNC T* begin() { return mtl_elements; }
  METAL_FUNC T* end() { return mtl_elements + N; }
  METAL_FUNC const T* begin() const { return mtl_elements; }
  METAL_FUNC const T* end() const { return mtl_elements + N; }
};

}  // namespace metal
