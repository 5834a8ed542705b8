// The strips of loops that count (metal_stop.h's loop_strip, msl/passes/loop_strips.hpp): a
// loop run strip by strip, each strip ending on the variable (steps of one, and on CUDA other
// steps) or on a count, runs the same iterations as the loop as written, every strip runs at
// least one and at most METALCALL_LOOP_STRIP, near the ends of each type, up and down; also in
// the bounded form (a bound that cannot change: one comparison with the nearer of it and the end).
#define METALCALL_LOOP_STRIP 3
#include "metal_stdlib.h"
#include "check.h"

template <int Op, class T> static bool holds(T v, T bound) {
  return Op == 0 ? v < bound : Op == 1 ? v <= bound : Op == 2 ? v > bound : v >= bound;
}

// The iterations of `for (T v = v0; v OP bound; v += step)` (-= counting down), run in strips;
// -1 when a strip runs none or more than the strip's length.
template <int Op, class T> static long long in_strips(T v0, T bound, T step, bool unit) {
  long long count = 0;
  T v = v0;
  while (holds<Op>(v, bound)) {
    metal::mtl_strip::loop_strip<Op, T, T, T> s = unit ? metal::mtl_strip::loop_strip<Op, T, T, T>(v)
                                                         : metal::mtl_strip::loop_strip<Op, T, T, T>(v, step);
    long long length = 0;
    for (; holds<Op>(v, bound) && s.next(v); v = Op <= 1 ? T(v + step) : T(v - step)) ++length;
    if (length < 1 || length > METALCALL_LOOP_STRIP) return -1;
    count += length;
  }
  return count;
}

// The same loop in bounded strips (a bound that cannot change: `s.within(v)` alone tests it).
template <int Op, class T> static long long in_bounded_strips(T v0, T bound, T step, bool unit) {
  using Strip = metal::mtl_strip::loop_strip<Op, T, const T&, T>;  // x a reference, as `constant T& n`
  long long count = 0;
  T v = v0;
  while (holds<Op>(v, bound)) {
    Strip s = unit ? Strip(metal::mtl_strip::upto_t(), v, bound) : Strip(metal::mtl_strip::upto_t(), v, step, bound);
    long long length = 0;
    for (; s.within(v); v = Op <= 1 ? T(v + step) : T(v - step)) ++length;
    if (length < 1 || length > METALCALL_LOOP_STRIP) return -1;
    count += length;
  }
  return count;
}

template <int Op, class T> static long long as_written(T v0, T bound, T step) {
  long long count = 0;
  for (T v = v0; holds<Op>(v, bound); v = Op <= 1 ? T(v + step) : T(v - step)) ++count;
  return count;
}

template <int Op, class T> static void loops_of(T lo, T hi) {
  const T steps[] = {T(1), T(2), T(3), T(7)};
  for (T step : steps) {
    // Starts and bounds in the middle and at both ends, where the plain loop does not wrap.
    const T mid = T(lo / 2 + hi / 2);
    const T up_bounds[] = {T(mid + 20), T(hi - step), T(hi - 2 * step + 1)};
    const T down_bounds[] = {T(mid - 20), T(lo + step), T(lo + 2 * step - 1)};
    for (int k = 0; k < 3; ++k) {
      const T bound = Op <= 1 ? up_bounds[k] : down_bounds[k];
      for (int back = 0; back < 12; ++back) {
        const T v0 = Op <= 1 ? T(bound - T(back)) : T(bound + T(back));
        CHECK(in_strips<Op>(v0, bound, step, step == T(1)) == as_written<Op>(v0, bound, step));
        CHECK(in_strips<Op>(v0, bound, step, false) == as_written<Op>(v0, bound, step));
        CHECK(in_bounded_strips<Op>(v0, bound, step, step == T(1)) == as_written<Op>(v0, bound, step));
        CHECK(in_bounded_strips<Op>(v0, bound, step, false) == as_written<Op>(v0, bound, step));
      }
    }
  }
}

template <class T> static void every_op() {
  const T hi = T(metal::numeric_limits<T>::max()), lo = T(metal::numeric_limits<T>::min());
  loops_of<0, T>(lo, hi);
  loops_of<2, T>(lo, hi);
  if (T(-1) < T(0)) {  // <= and >= end on the variable for signed types only
    loops_of<1, T>(lo, hi);
    loops_of<3, T>(lo, hi);
  }
}

int main() {
  every_op<int>();
  every_op<unsigned>();
  every_op<long>();
  every_op<unsigned long>();
  // A step of 0 or below (an endless loop as written) counts: the strip stays bounded.
  metal::mtl_strip::loop_strip<0, int, int, int> zero(5, 0), back(5, -1);
  int runs = 0;
  while (zero.next(5) && back.next(5) && runs < 100) ++runs;
  CHECK(runs == METALCALL_LOOP_STRIP);
  // Near the type's end there is no room for a whole strip by value: it counts.
  metal::mtl_strip::loop_strip<0, unsigned, unsigned, unsigned> late(0xFFFFFFF0u, 6u);  // 3 steps of 6 pass the end
  CHECK(late.by_count);
  // Bounded, a step that counts tests the bound as written: 2 steps of 6 from 0xFFFFFFF0u stay below it.
  metal::mtl_strip::loop_strip<0, unsigned, unsigned, unsigned> near(metal::mtl_strip::upto_t(), 0xFFFFFFF0u, 6u,
                                                                     0xFFFFFFFDu);
  unsigned v = 0xFFFFFFF0u, steps = 0;
  for (; near.within(v) && steps < 100; v += 6u) ++steps;
  CHECK(near.by_count && steps == 3 && v == 0xFFFFFFF0u + 18u);
  // A bound of another type than v's (a promotion: int v, long x): the strip counts, the test is `v < x`.
  metal::mtl_strip::loop_strip<0, int, long, int> wide(metal::mtl_strip::upto_t(), 0, 5L);
  int w = 0;
  while (wide.within(w)) ++w;
  CHECK(w == 3);  // METALCALL_LOOP_STRIP
  return finish("loop strips");
}
