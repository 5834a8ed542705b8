// The GPU families the Metal simulator models: the limits of Apple's Metal feature set tables
// and the per-pipeline SIMD widths and thread limits real GPUs of each family report.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace metalcall::metal_sim {

struct GpuFamily {
  std::string name;             // what Device("metal-sim", family=...) takes: "apple7", "intel", "amd", ...
  std::string architecture;     // what the Metal backend reports for such a GPU: "apple7", "mac2"
  std::string gpu;              // a GPU of the family, for the device's name
  unsigned max_threads_per_threadgroup = 1024;      // maxThreadsPerThreadgroup (each dimension)
  std::uint64_t threadgroup_memory_length = 32768;  // maxThreadgroupMemoryLength
  std::uint64_t max_buffer_length = 0;              // maxBufferLength
  bool nonuniform_threadgroups = true;              // dispatchThreads: (Apple4+, Mac2)
  bool macos = true;  // a Mac's GPU: what Apple documents "in macOS" holds (buffer blits in whole 4-byte words)
  bool unified_memory = true;
  std::size_t page_size = 16384;                    // newBufferWithBytesNoCopy's page (vm_page_size)
  std::size_t linear_texture_alignment = 16;        // minimumLinearTextureAlignmentForPixelFormat:
  bool cube_arrays = true;       // texturecube_array / depthcube_array (Apple4 and later, Mac2)
  unsigned texture_entries = 128;  // the texture argument table's entries (31 on iOS GPU families 1-3, 128 on Macs)
  bool texture_atomics = true;   // MSL 3.1's texture atomics (macOS 14 / iOS 17, which Apple3 GPUs do not get)
  bool apple_gpu = true;         // sRGB writes, r8/rg8 sRGB formats and rgb9e5 writes (Apple2/3 and later; not Intel/AMD Macs)
  unsigned probe_simd_width = 32;                   // a probe pipeline's threadExecutionWidth: the device's simd_width
  std::vector<unsigned> pipeline_thread_limits;     // maxTotalThreadsPerThreadgroup a pipeline may have
  std::vector<unsigned> pipeline_simd_widths;       // threadExecutionWidth a pipeline may have
  bool atomic64_min_max = false;  // atomic_ulong's atomic_min/max_explicit: Apple8 Macs (M2) and Apple9
  unsigned ordinal = 0;  // distinct for every family and pinned variant: the simulated registryID
};

/** The families, in the order docs/metal-backend.md lists them. */
const std::vector<GpuFamily>& families();
/**
 * The family named `name` (case-insensitive); DeviceError naming the others when there is none.
 * "<family>-simd<W>" (intel-simd8, amd-simd64) is the family with every pipeline W wide, W one of
 * its widths: a device of its own, so that tests reach each width whatever a kernel is called.
 */
const GpuFamily& find_family(const std::string& name);
/** The family Device("metal-sim") opens without family=: METALCALL_METAL_SIM_FAMILY, else apple7. */
std::string default_family();

/** What one pipeline of `family` reports, chosen by the kernel's name: varied, but the same every run.
 * Its kernel runs on the CPU backend with SIMD-groups of its threadExecutionWidth. */
struct PipelineShape {
  unsigned max_total_threads_per_threadgroup = 1024;
  unsigned thread_execution_width = 32;
};
PipelineShape pipeline_shape(const GpuFamily& family, const std::string& kernel_name);

}  // namespace metalcall::metal_sim
