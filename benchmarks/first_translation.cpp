// A process's first CUDA translation on the host, no GPU needed: what a cold compile pays once per
// process before NVRTC runs (the translation cache's key, the front end, the prelude-part
// selection), then the same again warm. Build against the Python build's static library and run
// with a new cache folder:
//   g++ -std=c++17 -O2 -Icpp/src -Icpp/include benchmarks/first_translation.cpp \
//       build/cp311-cp311-linux_x86_64/libmetalcall.a -ldl -lpthread -o /tmp/first_translation
//   METALCALL_CACHE_DIR=$(mktemp -d) /tmp/first_translation
#include <chrono>
#include <cstdio>
#include <string>

#include "backends/translated/host_cxx.hpp"
#include "backends/translated/prelude_parts.hpp"
#include "backends/translated/translation_cache.hpp"
#include "msl/translate/front_end.hpp"

namespace {

const char* const kMul = R"(
#include <metal_stdlib>
using namespace metal;
kernel void mul(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                device float* c [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    c[i] = a[i] * b[i];
}
)";

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int main() {
  using namespace metalcall;
  for (const char* when : {"first", "again"}) {
    msl::FrontEndOptions front;
    front.target = msl::Target::cuda;
    front.preprocessor = translated::host_preprocessor("cuda");
    auto t = std::chrono::steady_clock::now();
    const translated::TranslationCache cache(kMul, front);
    const double key = ms_since(t);
    t = std::chrono::steady_clock::now();
    const msl::TranslatedUnit unit = msl::translate(kMul, front);
    const double translate = ms_since(t);
    t = std::chrono::steady_clock::now();
    const std::vector<std::string> parts = translated::prelude_part_options(unit.translation.code);
    const double select = ms_since(t);
    std::printf("%s: key %.2f ms, translate %.2f ms, parts %.2f ms (%zu options, %zu bytes of CUDA)\n", when, key,
                translate, select, parts.size(), unit.translation.code.size());
  }
  return 0;
}
