// The CUDA backend's compiler: translated MSL → CUDA C++ → cubin with NVRTC, cached
// on disk; and the modules and programs loaded from a cubin.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_device.hpp"
#include "core/backend.hpp"
#include "msl/translator.hpp"

namespace metalcall::cuda {

class Nvrtc {
 public:
  static Nvrtc& instance();
  /** NVRTC's version, the architecture and the translator's version: part of every cache key. */
  std::string identity(const std::string& arch) const;
  /** The cubin for `translation`, from the disk cache when it is there. Throws CompileError. */
  std::string build(const msl::Translation& translation, const std::string& source, bool fast_math,
                    const std::string& arch);

 private:
  Nvrtc();
  std::vector<std::string> include_dirs_;
};

/** A loaded cubin; unloaded when the last program using it goes. */
class CudaModule {
 public:
  CudaModule(CUcontext ctx, const std::string& cubin);
  ~CudaModule();
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;
  CUmodule handle() const { return module_; }

 private:
  CUcontext ctx_;
  CUmodule module_ = nullptr;
};

class CudaProgram : public Program {
 public:
  CudaProgram(KernelInfo info, std::shared_ptr<CudaModule> module, CUfunction fn, bool exact, std::size_t static_smem)
      : Program(std::move(info)), module_(std::move(module)), fn_(fn), exact_(exact), static_smem_(static_smem) {}
  CUfunction function() const { return fn_; }
  /** Every block must be exactly one threadgroup (barriers or SIMD-group functions). */
  bool exact() const { return exact_; }
  std::size_t static_smem() const { return static_smem_; }

 private:
  std::shared_ptr<CudaModule> module_;  // keeps the code loaded while queued work may run it
  CUfunction fn_;
  bool exact_;
  std::size_t static_smem_;
};

/** The program of `kernel` in a loaded module: function, layout and limits on this GPU. */
std::shared_ptr<Program> load_program(const msl::TranslatedKernel& kernel, const std::shared_ptr<CudaModule>& module,
                                      CUcontext ctx, const DeviceProps& props);

}  // namespace metalcall::cuda
