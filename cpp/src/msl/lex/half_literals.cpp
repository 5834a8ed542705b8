// Half literals rounded once (see half_literals.hpp).
#include "msl/lex/half_literals.hpp"

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace metalcall::msl {

namespace {

// strtod under a rounding mode (glibc honours the current one; a libc that does not gives the
// nearest double both ways, and a spelling within 2^-53 of a halfway point then counts as on it).
double parse(const std::string& digits, int mode) {
  const int saved = std::fegetround();
  std::fesetround(mode);
  const double v = std::strtod(digits.c_str(), nullptr);
  std::fesetround(saved);
  return v;
}

// The two halves around a finite non-negative v (lo <= v <= hi), as doubles, and their
// distance: halves are multiples of 2^-24 below 2^-14 and have 11 significant bits above.
double neighbours(double v, double& lo, double& hi) {
  int e = 0;
  std::frexp(v, &e);  // v = m * 2^e, 0.5 <= m < 1
  const double ulp = std::ldexp(1.0, std::max(e - 11, -24));
  lo = std::floor(v / ulp) * ulp;
  hi = lo == v ? v : lo + ulp;
  return ulp;
}

}  // namespace

std::string exact_half_literal(const std::string& spelling) {
  std::string digits;
  for (const char c : spelling)
    if (c != '\'') digits += c;
  char* end = nullptr;
  const double nearest = std::strtod(digits.c_str(), &end);
  if (digits.empty() || end != digits.c_str() + digits.size() || !std::isfinite(nearest) || nearest < 0) return "";
  double lo = 0, hi = 0;
  const double ulp = neighbours(nearest, lo, hi);
  double half = lo;
  if (hi != lo) {
    const double mid = lo + (hi - lo) / 2;  // exact: both are halves
    // The double nearest the literal settles the side unless it is the halfway point itself;
    // then the literal's value rounded down and up tells whether it is exactly there.
    bool above = nearest > mid;
    if (nearest == mid) {
      const bool exact = parse(digits, FE_DOWNWARD) == mid && parse(digits, FE_UPWARD) == mid;
      const bool lo_even = std::fmod(lo / ulp, 2.0) == 0;  // ties go to the even significand
      above = exact ? !lo_even : parse(digits, FE_UPWARD) > mid;
    }
    half = above ? hi : lo;
  }
  if (half > 65504.0) return "";  // infinity
  // A multiple of 2^-24 (below 2^40 of them), written with integers only: "%a" would write
  // the locale's decimal point (a ',' under de_DE).
  char text[64];
  std::snprintf(text, sizeof text, "0x%llxp-24f", static_cast<unsigned long long>(std::ldexp(half, 24)));
  return text;
}

}  // namespace metalcall::msl
