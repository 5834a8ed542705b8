// metalcall MSL prelude: metal::uniform<T> and make_uniform (MSL 2.4+ <metal_uniform>):
// a value the program promises is the same in every thread. Here it is only a wrapper
// that converts to and from T (both implicit, as MSL allows `uniform<int> n = a / u;`),
// so arithmetic on it is T's.
#pragma once

namespace metal {

template <class T> struct uniform {
  T value;

  uniform() = default;
  METAL_FUNC constexpr uniform(const T& v) : value(v) {}
  METAL_FUNC constexpr operator T() const { return value; }
};

template <class T> METAL_FUNC constexpr uniform<T> make_uniform(const T& v) { return uniform<T>(v); }

#if !METAL_CUDA
// An integer division by a uniform<int> is guarded like one by an int (metal_division.h).
namespace mtl_rt {
template <class T> struct int_operand<uniform<T>> : int_operand<T> {};
}  // namespace mtl_rt
#endif

}  // namespace metal
