// The simulated GPU families (sim_families.hpp). Limits from Apple's Metal feature set tables:
// 1024 threads per threadgroup and 32 KB of threadgroup memory on Apple4 and later and on Mac2;
// non-uniform threadgroups and cube texture arrays from Apple4 and on Mac2 (so apple3 models a GPU
// without them: 16 KB, dispatchThreadgroups only); 512 threads per threadgroup on Apple1 to Apple3
// (Apple's implementation-limits table: iOS GPU family 3, the A9's); MSL 3.1's texture atomics need macOS 14 / iOS 17,
// which no Apple3 GPU runs; 256 MB, the buffer length the tables guarantee, as maxBufferLength.
// Linear textures' rows: 16-byte aligned on Apple GPUs, 256 on the others (the simulator's choice).
// Pixel formats: sRGB writes and R8/RG8Unorm_sRGB from Apple1/2, rgb9e5 writes from Apple3 (every
// Apple family simulated), none of them on Intel's and AMD's Mac2 GPUs.
// 64-bit atomics' min and max: GPUs of Apple8 and Mac2 (the M2, a Mac's) and of Apple9, as the
// tables list them; not Apple7 (M1), Apple3, nor Intel's and AMD's Mac2 GPUs.
// SIMD widths: 32 on Apple GPUs; 8, 16 or 32 per pipeline on Intel GPUs (the compiler's SIMD8/16/32);
// 32 or 64 on AMD GPUs (wave32, wave64). Each simulated pipeline runs with its own (the CPU backend's
// SIMD-group functions take the launch's width); the Intel and AMD devices report the width a probe
// pipeline might (16, 64) as their simd_width, which a pipeline need not have.
#include "backends/metal_sim/sim_families.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <mutex>

#include "metalcall/errors.hpp"

namespace metalcall::metal_sim {

namespace {

constexpr std::uint64_t kGuaranteedBufferLength = std::uint64_t(256) << 20;

GpuFamily family(std::string name, std::string architecture, std::string gpu, unsigned probe_width,
                 std::vector<unsigned> limits, std::vector<unsigned> widths = {32}) {
  GpuFamily f;
  f.name = std::move(name);
  f.architecture = std::move(architecture);
  f.gpu = std::move(gpu);
  f.max_buffer_length = kGuaranteedBufferLength;
  f.probe_simd_width = probe_width;
  f.pipeline_thread_limits = std::move(limits);
  f.pipeline_simd_widths = std::move(widths);
  return f;
}

std::vector<GpuFamily> make_families() {
  std::vector<GpuFamily> all;
  all.push_back(family("apple7", "apple7", "Apple M1", 32, {1024, 1024, 896, 768}));
  all.push_back(family("apple8", "apple8", "Apple M2", 32, {1024, 1024, 896, 768}));
  all.push_back(family("apple9", "apple9", "Apple M3", 32, {1024, 1024, 896, 768}));
  all[1].atomic64_min_max = all[2].atomic64_min_max = true;  // the M2 Mac's is Apple8 and Mac2
  GpuFamily apple3 = family("apple3", "apple3", "Apple A9", 32, {512, 256});
  apple3.max_threads_per_threadgroup = 512;
  apple3.threadgroup_memory_length = 16384;
  apple3.macos = false;  // an iPhone's or iPad's GPU
  apple3.texture_entries = 31;  // the limits table: 31 texture entries on iOS GPU families 1-3
  apple3.nonuniform_threadgroups = false;
  apple3.cube_arrays = false;
  apple3.texture_atomics = false;
  all.push_back(apple3);
  GpuFamily intel = family("intel", "mac2", "Intel UHD Graphics 630", 16, {1024, 512, 256}, {8, 16, 32});
  intel.page_size = 4096;
  intel.linear_texture_alignment = 256;
  intel.apple_gpu = false;
  all.push_back(intel);
  GpuFamily amd = family("amd", "mac2", "AMD Radeon Pro 5500M", 64, {1024, 256}, {32, 64});
  amd.page_size = 4096;
  amd.linear_texture_alignment = 256;
  amd.apple_gpu = false;
  amd.unified_memory = false;
  all.push_back(amd);
  for (std::size_t i = 0; i < all.size(); ++i) all[i].ordinal = static_cast<unsigned>(i);
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

namespace {
// The family whose every pipeline is `width` wide (made once, never destroyed, as the families).
const GpuFamily& pinned(const GpuFamily& family, unsigned width, const std::string& name) {
  const auto& widths = family.pipeline_simd_widths;
  if (std::find(widths.begin(), widths.end(), width) == widths.end()) {
    std::string allowed;
    for (unsigned w : widths) allowed += (allowed.empty() ? "" : ", ") + std::to_string(w);
    throw DeviceError("[metal-sim] GPU family '" + name + "': " + family.name + " pipelines run " + allowed +
                      " wide, not " + std::to_string(width));
  }
  static std::mutex mutex;
  static auto* made = new std::map<std::string, GpuFamily>;
  std::lock_guard<std::mutex> lock(mutex);
  const std::string key = family.name + "-simd" + std::to_string(width);
  auto found = made->find(key);
  if (found != made->end()) return found->second;
  GpuFamily variant = family;
  variant.name = key;
  variant.pipeline_simd_widths = {width};
  variant.ordinal = static_cast<unsigned>(families().size() + made->size());
  return made->emplace(key, std::move(variant)).first->second;
}
}  // namespace

const GpuFamily& find_family(const std::string& name) {
  const std::string wanted = lower(name);
  const std::size_t suffix = wanted.rfind("-simd");
  if (suffix != std::string::npos && suffix + 5 < wanted.size() && wanted.size() - suffix <= 8 &&
      std::all_of(wanted.begin() + suffix + 5, wanted.end(), [](unsigned char c) { return std::isdigit(c); }))
    return pinned(find_family(wanted.substr(0, suffix)), unsigned(std::stoul(wanted.substr(suffix + 5))), name);
  std::string names;
  for (const GpuFamily& f : families()) {
    if (f.name == wanted) return f;
    names += (names.empty() ? "" : ", ") + f.name;
  }
  throw DeviceError("[metal-sim] unknown GPU family '" + name + "': use one of " + names +
                    ", or one of them with -simd<W> for pipelines all W wide (Device(\"metal-sim\", family=...) or "
                    "METALCALL_METAL_SIM_FAMILY)");
}

std::string default_family() {
  const char* env = std::getenv("METALCALL_METAL_SIM_FAMILY");
  return env && *env ? std::string(env) : std::string("apple7");
}

PipelineShape pipeline_shape(const GpuFamily& family, const std::string& kernel_name) {
  const std::uint64_t h = stable_hash(kernel_name);
  PipelineShape shape;
  shape.max_total_threads_per_threadgroup = family.pipeline_thread_limits[(h >> 16) % family.pipeline_thread_limits.size()];
  shape.thread_execution_width = family.pipeline_simd_widths[(h >> 40) % family.pipeline_simd_widths.size()];
  return shape;
}

}  // namespace metalcall::metal_sim
