// A translated kernel loaded from its shared object.
#pragma once

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>

#include "core/backend.hpp"
#include "msl/targets/cpu_abi.hpp"

namespace metalcall::cpu {

/** A loaded shared object; closed when the last program using it goes. */
class CpuModule {
 public:
  explicit CpuModule(const std::string& object);  // the shared object's bytes; throws DeviceError
  ~CpuModule();
  CpuModule(const CpuModule&) = delete;
  CpuModule& operator=(const CpuModule&) = delete;
  void* symbol(const std::string& name) const;

 private:
  void* handle_;
};

/**
 * A kernel's recent cost: the median of its last three runs (the lower of two after
 * two runs). One run slowed down by preemption or by first-run costs (symbol
 * binding, page faults) does not move it; a real change of cost (another argument
 * value) does, after two runs. Calls racing here may interleave their samples:
 * harmless for an estimate.
 */
class MeasuredCost {
 public:
  /** Negative until the first run. */
  double estimate() const {
    const double a = samples_[0].load(std::memory_order_relaxed), b = samples_[1].load(std::memory_order_relaxed),
                 c = samples_[2].load(std::memory_order_relaxed);
    if (c < 0) return b < 0 ? a : std::min(a, b);
    return std::max(std::min(a, b), std::min(std::max(a, b), c));
  }
  void record(double sample) {
    // A load and a store rather than a read-modify-write: racing calls may take the
    // same slot, which is harmless here, and each call saves a locked instruction.
    const unsigned slot = next_.load(std::memory_order_relaxed);
    next_.store(slot == 2 ? 0 : slot + 1, std::memory_order_relaxed);
    samples_[slot].store(sample, std::memory_order_relaxed);
  }

 private:
  std::atomic<double> samples_[3] = {-1.0, -1.0, -1.0};
  std::atomic<unsigned> next_{0};
};

class CpuProgram : public Program {
 public:
  CpuProgram(KernelInfo info, std::shared_ptr<CpuModule> module, metalcall_cpu_entry entry, bool uses_fibers,
             bool checked)
      : Program(std::move(info)), module_(std::move(module)), entry_(entry), uses_fibers_(uses_fibers),
        checked_(checked) {}
  metalcall_cpu_entry entry() const { return entry_; }
  bool uses_fibers() const { return uses_fibers_; }
  bool checked() const { return checked_; }  // built for Device("cpu", checked=True)
  /** Measured work per grid thread, in ns summed over workers; negative until the first run. */
  double ns_per_thread() const { return cost_.estimate(); }
  void record_ns_per_thread(double ns) { cost_.record(ns); }

 private:
  std::shared_ptr<CpuModule> module_;  // keeps the code loaded while queued work may run it
  metalcall_cpu_entry entry_;
  bool uses_fibers_;
  bool checked_;
  MeasuredCost cost_;
};

}  // namespace metalcall::cpu
