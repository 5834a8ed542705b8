// Tiny check helpers for the prelude tests. Included after the prelude, as a
// kernel's own code would come after it; this also proves that system headers
// included later do not clash with the prelude's typedefs.
#pragma once
#include <cstdio>
#include <cstring>

static int g_failures = 0;
static int g_checks = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    ++g_checks;                                                                \
    if (!(cond)) {                                                             \
      std::printf("%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);     \
      ++g_failures;                                                            \
    }                                                                          \
  } while (0)

// |a - b| <= tol * max(1, |b|), as doubles.
#define CHECK_NEAR(a, b, tol)                                                   \
  do {                                                                          \
    ++g_checks;                                                                 \
    double a_ = double(a), b_ = double(b), m_ = b_ < 0 ? -b_ : b_;              \
    double d_ = a_ - b_;                                                        \
    if (d_ < 0) d_ = -d_;                                                       \
    if (!(d_ <= (tol) * (m_ > 1 ? m_ : 1))) {                                   \
      std::printf("%s:%d: CHECK_NEAR failed: %s = %.9g, expected %.9g\n",      \
                  __FILE__, __LINE__, #a, a_, b_);                              \
      ++g_failures;                                                             \
    }                                                                           \
  } while (0)

// Exact component-wise equality of two vectors (value, not bits).
template <class V, class W> static bool same_vec(const V& a, const W& b, int n) {
  for (int i = 0; i < n; ++i)
    if (!(a[i] == b[i])) return false;
  return true;
}

static int finish(const char* name) {
  std::printf("%s: %d checks, %d failed\n", name, g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
