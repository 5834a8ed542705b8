// A translated kernel loaded from its shared object.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "core/backend.hpp"
#include "msl/cpu_abi.hpp"

namespace metalcall::cpu {

/** A loaded shared object; closed when the last program using it goes. */
class CpuModule {
 public:
  explicit CpuModule(const std::string& path);  // throws DeviceError
  ~CpuModule();
  CpuModule(const CpuModule&) = delete;
  CpuModule& operator=(const CpuModule&) = delete;
  void* symbol(const std::string& name) const;

 private:
  void* handle_;
};

class CpuProgram : public Program {
 public:
  CpuProgram(KernelInfo info, std::shared_ptr<CpuModule> module, metalcall_cpu_entry entry, bool uses_fibers)
      : Program(std::move(info)), module_(std::move(module)), entry_(entry), uses_fibers_(uses_fibers) {}
  metalcall_cpu_entry entry() const { return entry_; }
  bool uses_fibers() const { return uses_fibers_; }
  /** Measured work per grid thread, in ns summed over workers: a moving average over
   *  recent calls (the cost can depend on arguments); negative until the first run. */
  double ns_per_thread() const { return ns_per_thread_.load(std::memory_order_relaxed); }
  void record_ns_per_thread(double ns) {
    // Calls racing here may lose an update: harmless for an estimate.
    const double old = ns_per_thread();
    ns_per_thread_.store(old < 0 ? ns : old + (ns - old) / 4, std::memory_order_relaxed);
  }

 private:
  std::shared_ptr<CpuModule> module_;  // keeps the code loaded while queued work may run it
  metalcall_cpu_entry entry_;
  bool uses_fibers_;
  std::atomic<double> ns_per_thread_{-1.0};
};

}  // namespace metalcall::cpu
