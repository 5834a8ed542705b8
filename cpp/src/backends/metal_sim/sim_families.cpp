// The simulated GPU families (sim_families.hpp). Limits from Apple's Metal feature set tables:
// 1024 threads per threadgroup and 32 KB of threadgroup memory on Apple4 and later and on Mac2;
// non-uniform threadgroups from Apple4 and on Mac2 (so apple3 models a GPU without them: 16 KB,
// dispatchThreadgroups only); 256 MB, the buffer length the tables guarantee, as maxBufferLength.
// Linear textures' rows: 16-byte aligned on Apple GPUs, 256 on the others (the simulator's choice).
// SIMD widths: 32 on Apple GPUs; 8, 16 or 32 per pipeline on Intel GPUs; 32 or 64 on AMD GPUs. The
// simulated pipelines run 32 wide (the CPU backend's SIMD-groups); the Intel and AMD devices report
// the width a probe pipeline might (16, 64) as their simd_width, which a pipeline need not have.
#include "backends/metal_sim/sim_families.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "metalcall/errors.hpp"

namespace metalcall::metal_sim {

namespace {

constexpr std::uint64_t kGuaranteedBufferLength = std::uint64_t(256) << 20;

GpuFamily family(std::string name, std::string architecture, std::string gpu, unsigned probe_width,
                 std::vector<unsigned> limits) {
  GpuFamily f;
  f.name = std::move(name);
  f.architecture = std::move(architecture);
  f.gpu = std::move(gpu);
  f.max_buffer_length = kGuaranteedBufferLength;
  f.probe_simd_width = probe_width;
  f.pipeline_thread_limits = std::move(limits);
  return f;
}

std::vector<GpuFamily> make_families() {
  std::vector<GpuFamily> all;
  all.push_back(family("apple7", "apple7", "Apple M1", 32, {1024, 1024, 896, 768}));
  all.push_back(family("apple8", "apple8", "Apple M2", 32, {1024, 1024, 896, 768}));
  all.push_back(family("apple9", "apple9", "Apple M3", 32, {1024, 1024, 896, 768}));
  GpuFamily apple3 = family("apple3", "apple3", "Apple A9", 32, {1024, 512});
  apple3.threadgroup_memory_length = 16384;
  apple3.nonuniform_threadgroups = false;
  all.push_back(apple3);
  GpuFamily intel = family("intel", "mac2", "Intel UHD Graphics 630", 16, {1024, 512, 256});
  intel.page_size = 4096;
  intel.linear_texture_alignment = 256;
  all.push_back(intel);
  GpuFamily amd = family("amd", "mac2", "AMD Radeon Pro 5500M", 64, {1024, 256});
  amd.page_size = 4096;
  amd.linear_texture_alignment = 256;
  amd.unified_memory = false;
  all.push_back(amd);
  return all;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// FNV-1a: a hash that is the same in every process and on every machine.
std::uint64_t stable_hash(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

const std::vector<GpuFamily>& families() {
  static const auto& all = *new std::vector<GpuFamily>(make_families());  // never destroyed: safe at exit
  return all;
}

const GpuFamily& find_family(const std::string& name) {
  const std::string wanted = lower(name);
  std::string names;
  for (const GpuFamily& f : families()) {
    if (f.name == wanted) return f;
    names += (names.empty() ? "" : ", ") + f.name;
  }
  throw DeviceError("[metal-sim] unknown GPU family '" + name + "': use one of " + names +
                    " (Device(\"metal-sim\", family=...) or METALCALL_METAL_SIM_FAMILY)");
}

std::string default_family() {
  const char* env = std::getenv("METALCALL_METAL_SIM_FAMILY");
  return env && *env ? std::string(env) : std::string("apple7");
}

PipelineShape pipeline_shape(const GpuFamily& family, const std::string& kernel_name) {
  const std::uint64_t h = stable_hash(kernel_name);
  PipelineShape shape;
  shape.max_total_threads_per_threadgroup = family.pipeline_thread_limits[(h >> 16) % family.pipeline_thread_limits.size()];
  return shape;
}

}  // namespace metalcall::metal_sim
