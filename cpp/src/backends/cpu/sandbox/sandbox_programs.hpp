// Kernels of the sandboxed CPU device: a module is a compiled kernel object, kept here
// in a sealed memfd and loaded only by the worker; a program is one kernel of it,
// resolved in the worker. Both are given to a new worker again before their next use.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "backends/cpu/cpu_program.hpp"
#include "backends/cpu/sandbox/worker_link.hpp"
#include "core/backend.hpp"
#include "msl/translate/translator.hpp"

namespace metalcall::cpu::sandbox {

/** A kernel object (after the object check), never loaded in this process. */
class SandboxModule {
 public:
  /** Keeps `object` in a sealed memfd; throws DeviceError. */
  SandboxModule(std::shared_ptr<WorkerLink> link, const std::string& object);
  ~SandboxModule();
  SandboxModule(const SandboxModule&) = delete;
  SandboxModule& operator=(const SandboxModule&) = delete;
  std::uint64_t id() const { return id_; }
  /** Loads it into the current worker if it is not there (link locked). Throws WorkerLost or DeviceError. */
  void make_ready(WorkerLink& link);

 private:
  std::shared_ptr<WorkerLink> link_;
  std::uint64_t id_;
  int fd_ = -1;
};

/** What the worker needs to resolve a kernel: its symbols and how it runs. */
struct KernelSymbols {
  std::string entry, layout;
  bool uses_fibers = false;
  bool checked = false;
};

class SandboxProgram : public Program {
 public:
  SandboxProgram(KernelInfo info, std::shared_ptr<SandboxModule> module, std::uint64_t id, KernelSymbols symbols,
                 std::shared_ptr<WorkerLink> link)
      : Program(std::move(info)), module_(std::move(module)), id_(id), symbols_(std::move(symbols)),
        link_(std::move(link)) {}
  ~SandboxProgram() override { link_->forget_program(id_); }
  std::uint64_t id() const { return id_; }
  /** Loads and defines it in the current worker if it is not there (link locked). Throws WorkerLost or DeviceError. */
  void make_ready(WorkerLink& link);
  /** Measured wall time per grid thread in the worker, in ns; negative until the first run. */
  double ns_per_thread() const { return cost_.estimate(); }
  void record_ns_per_thread(double ns) { cost_.record(ns); }

 private:
  std::shared_ptr<SandboxModule> module_;  // outlives the program in the worker too
  std::uint64_t id_;
  KernelSymbols symbols_;
  std::shared_ptr<WorkerLink> link_;
  MeasuredCost cost_;
};

/** The program of `kernel` in `module`, resolved in the worker for its layout. Throws DeviceError. */
std::shared_ptr<Program> load_sandbox_program(const std::shared_ptr<WorkerLink>& link, const msl::TranslatedKernel& kernel,
                                              const std::shared_ptr<SandboxModule>& module, bool checked);

}  // namespace metalcall::cpu::sandbox
