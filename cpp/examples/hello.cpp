// hello: compile an MSL kernel and call it from C++ on the CPU backend.
//
// Build against an installed metalcall (see CMakeLists.txt next to this file):
//   find_package(metalcall 0.1 REQUIRED)
//   target_link_libraries(hello PRIVATE metalcall::metalcall)
#include <metalcall/metalcall.hpp>

#include <cstdio>
#include <exception>

namespace {

const char* kSource = R"msl(
#include <metal_stdlib>
using namespace metal;

kernel void mul(const device float* a [[buffer(0)]],
                const device float* b [[buffer(1)]],
                device float* c [[buffer(2)]],
                uint i [[thread_position_in_grid]]) {
    c[i] = a[i] * b[i];
}
)msl";

// Line 4 uses a name that does not exist.
const char* kBadSource = R"msl(#include <metal_stdlib>
using namespace metal;
kernel void broken(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    a[i] = undefined_name;
}
)msl";

}  // namespace

int main() try {
  std::printf("metalcall %s, backends built in:", metalcall::version());
  for (const auto& name : metalcall::Device::backends()) std::printf(" %s", name.c_str());
  std::printf("\n");

  metalcall::Device device = metalcall::Device::open("cpu");
  std::printf("device: %s\n", device.info().name.c_str());

  metalcall::Library library = device.compile(kSource);
  metalcall::Kernel mul = library.function("mul");

  constexpr std::size_t n = 8;
  metalcall::Buffer a = device.allocate(n * sizeof(float));
  metalcall::Buffer b = device.allocate(n * sizeof(float));
  metalcall::Buffer c = device.allocate(n * sizeof(float));
  auto* pa = static_cast<float*>(a.host_data());
  auto* pb = static_cast<float*>(b.host_data());
  for (std::size_t i = 0; i < n; ++i) {
    pa[i] = static_cast<float>(i);
    pb[i] = 0.5f;
  }

  // The grid is in threads: one thread per element.
  metalcall::LaunchShape shape;
  shape.grid[0] = n;
  metalcall::Completion done = mul(shape, {metalcall::Argument::from_buffer(a), metalcall::Argument::from_buffer(b),
                                           metalcall::Argument::from_buffer(c)});
  done.wait();

  // host_data() waits for pending work on the buffer before handing out the pointer.
  const auto* pc = static_cast<const float*>(c.host_data());
  std::printf("c = a * b:");
  for (std::size_t i = 0; i < n; ++i) {
    std::printf(" %g", pc[i]);
    if (pc[i] != pa[i] * pb[i]) {
      std::fprintf(stderr, "\nwrong value at %zu: %g != %g\n", i, pc[i], pa[i] * pb[i]);
      return 1;
    }
  }
  std::printf("\n");

  // Errors are exceptions carrying what went wrong.
  try {
    device.compile(kBadSource);
    std::fprintf(stderr, "bad MSL compiled\n");
    return 1;
  } catch (const metalcall::CompileError& e) {
    std::printf("CompileError at line %d, column %d: %s\n", e.line(), e.column(), e.source_line().c_str());
  }
  try {
    mul(shape, {metalcall::Argument::from_buffer(a)});  // mul takes three arguments
    std::fprintf(stderr, "a call with one argument ran\n");
    return 1;
  } catch (const metalcall::ArgumentError& e) {
    std::printf("ArgumentError: %s\n", e.what());
  }
  std::printf("hello: ok\n");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "hello: %s\n", e.what());
  return 1;
}
