// The CUDA backend's compiler: translated MSL → CUDA C++ → cubin with NVRTC, cached
// on disk; and the modules and programs loaded from a cubin. Each translation is
// built twice at most: with the kernels' buffer pointers __restrict__ (the default,
// for calls whose buffers do not overlap) and, the first time a call's buffers
// overlap, without.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cuda/cuda_device.hpp"
#include "backends/cuda/cuda_stop.hpp"
#include "core/backend.hpp"
#include "msl/translate/translator.hpp"

namespace metalcall::cuda {

class Nvrtc {
 public:
  static Nvrtc& instance();
  /** NVRTC's version, the architecture and the translator's version: part of every cache key. */
  std::string identity(const std::string& arch) const;
  /**
   * The cubin for `translation`, from the disk cache when it is there; `restrict_buffers`
   * false builds it with METALCALL_NO_RESTRICT (see msl/targets/cuda_abi.hpp); `coarsened`
   * includes the coarsened entry points (else METALCALL_NO_COARSENED). Throws CompileError.
   */
  std::string build(const msl::Translation& translation, const std::string& source, bool fast_math,
                    const std::string& arch, bool restrict_buffers = true, bool coarsened = false);

 private:
  Nvrtc();
  std::vector<std::string> include_dirs_;
};

/**
 * A loaded cubin; unloaded when the last program using it goes. Its kernels are loaded and
 * their layout tables read when it is: with the driver's lazy loading (the default since
 * CUDA 12.2) the first use of a kernel loads its code, which waits for the GPU's running
 * kernels, and holds a driver lock that the stop word's write needs — so a first call made
 * while an endless kernel ran could neither proceed nor let that kernel be stopped.
 */
class CudaModule {
 public:
  /** Loads `cubin` into `ctx`, with `kernels`; its stop checks read `stop` (cuda_stop.hpp). */
  CudaModule(CUcontext ctx, const std::string& cubin, StopWord& stop,
             const std::vector<msl::TranslatedKernel>& kernels);
  ~CudaModule();
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;
  CUmodule handle() const { return module_; }
  /** A kernel of the module by entry symbol (loaded with the module). Throws DeviceError. */
  CUfunction function(const std::string& entry_symbol, const std::string& kernel_name) const;
  /** The layout table's bytes of a kernel, read with the module (empty when there is none). */
  const std::string& layout(const std::string& layout_symbol) const;

 private:
  CUcontext ctx_;
  CUmodule module_ = nullptr;
  std::map<std::string, CUfunction> functions_;
  std::map<std::string, std::string> layouts_;
};

/**
 * The builds of one translation: restrict at once, plain on first need; each without the
 * coarsened entry points, which a build of its own holds, made the first time a launch would
 * take one (a grid of 2^18 threads or more: most kernels never get there).
 */
class CudaModules {
 public:
  /** Builds and loads the restrict module. Throws CompileError. */
  CudaModules(CUcontext ctx, StopWord& stop, const msl::Translation& translation, const std::string& source,
              bool fast_math, const std::string& arch);
  const std::shared_ptr<CudaModule>& restricted() const { return restricted_; }
  /** The module without restrict, built and loaded on first use. Throws CompileError or DeviceError. */
  std::shared_ptr<CudaModule> plain();
  /**
   * The build with the coarsened entry points, restrict or plain (`overlapping`), on first use;
   * null where the translation has none. Throws CompileError or DeviceError.
   */
  std::shared_ptr<CudaModule> coarsened(bool overlapping);

 private:
  CUcontext ctx_;
  StopWord& stop_;
  msl::Translation translation_;  // kept for the plain build
  std::string source_;
  bool fast_math_;
  std::string arch_;
  std::shared_ptr<CudaModule> restricted_;
  std::mutex mutex_;
  std::shared_ptr<CudaModule> plain_;
  std::shared_ptr<CudaModule> coarsened_[2];  // restrict, plain
};

/** Where one parameter's value and pointer lie in the kernel's parameter block (-1: nowhere). */
struct ParamSlotOffsets {
  long long value = -1;
  long long pointer = -1;
};

/** Threads per block of a coarsened launch (cuda_queue.cpp). */
constexpr unsigned kCoarsenedBlock = 256;

class CudaProgram : public Program {
 public:
  CudaProgram(KernelInfo info, std::shared_ptr<CudaModules> modules, std::string entry_symbol, CUfunction fn,
              bool exact, std::size_t static_smem, int dynamic_smem_limit, std::vector<ParamSlotOffsets> slots,
              std::size_t block_bytes)
      : Program(std::move(info)), modules_(std::move(modules)), entry_symbol_(std::move(entry_symbol)), fn_(fn),
        exact_(exact), static_smem_(static_smem), dynamic_smem_limit_(dynamic_smem_limit), slots_(std::move(slots)),
        block_bytes_(block_bytes) {
    // Automatic threadgroups of kernels without barriers: 256 threads, as CUDA code
    // usually launches (c = a * b at 1e8 on an H100: 2658 GB/s against 2459 with 1024).
    // Kernels with barriers keep the largest group: their work may depend on its size.
    if (!exact_) automatic_threadgroup_limit_ = 256;
  }
  /** The function whose buffer pointers are restrict: for calls whose buffers do not overlap. */
  CUfunction function() const { return fn_; }
  /** The function for calls whose buffers overlap; builds the plain module on first use. */
  CUfunction unrestricted_function() const;
  /**
   * The coarsened entry point of function() or unrestricted_function() (`overlapping`), or null
   * where the kernel has none (msl::cuda_coarsened_symbol: thread positions kCudaCoarsening at
   * a time, buffers 16-byte aligned).
   */
  CUfunction coarsened_function(bool overlapping) const;
  /** Every block must be exactly one threadgroup (barriers or SIMD-group functions). */
  bool exact() const { return exact_; }
  std::size_t static_smem() const { return static_smem_; }
  /** Per parameter (by position): its fields in the parameter block. */
  const std::vector<ParamSlotOffsets>& slots() const { return slots_; }
  /** The parameter block's size: what each launch passes. */
  std::size_t block_bytes() const { return block_bytes_; }

 private:
  std::shared_ptr<CudaModules> modules_;  // keeps the code loaded while queued work may run it
  std::string entry_symbol_;
  CUfunction fn_;
  bool exact_;
  std::size_t static_smem_;
  int dynamic_smem_limit_;  // set on each function (0: the default suffices)
  std::vector<ParamSlotOffsets> slots_;
  std::size_t block_bytes_;
  mutable std::mutex mutex_;
  mutable CUfunction plain_fn_ = nullptr;
  mutable CUfunction coarsened_fn_ = nullptr, plain_coarsened_fn_ = nullptr;
  mutable bool coarsened_probed_ = false, plain_coarsened_probed_ = false;
};

/** The program of `kernel` in loaded modules: function, layout and limits on this GPU. */
std::shared_ptr<Program> load_program(const msl::TranslatedKernel& kernel, const std::shared_ptr<CudaModules>& modules,
                                      CUcontext ctx, const DeviceProps& props);

}  // namespace metalcall::cuda
