// The sandboxed CPU device (see sandbox_device.hpp): the CPU backend's compiler in this
// process, its programs and queue over a worker process.
//
// Compiling stays here: the front end and the system C++ compiler (a process of its
// own) only read the source and write an object; the object is checked, then sealed in
// a memfd and loaded only by the worker. Nothing of the kernel runs in this process.
#include "backends/cpu/sandbox/sandbox_device.hpp"

#include <algorithm>
#include <vector>

#include "backends/cpu/cpu_compiler.hpp"
#include "backends/cpu/cpu_queue.hpp"
#include "backends/cpu/object_check.hpp"
#include "backends/cpu/sandbox/sandbox_calls.hpp"
#include "backends/cpu/sandbox/sandbox_programs.hpp"
#include "backends/cpu/sandbox/shared_arena.hpp"
#include "backends/cpu/sandbox/worker_link.hpp"
#include "backends/translated/host_cxx.hpp"
#include "backends/translated/translated_library.hpp"
#include "metalcall/errors.hpp"

namespace metalcall::cpu {

namespace {

using sandbox::SandboxModule;

class SandboxDevice : public BackendDevice {
 public:
  SandboxDevice(const DeviceOptions& options, DeviceInfo info)
      : info_(std::move(info)), checked_(options.checked), arena_(std::make_shared<sandbox::SharedArena>()),
        link_(std::make_shared<sandbox::WorkerLink>(arena_)), runner_(link_, arena_), queue_(runner_, options.kernel_timeout) {
    info_.name += checked_ ? " [checked, sandbox]" : " [sandbox]";
    info_.max_buffer_length = std::min<std::uint64_t>(info_.max_buffer_length, arena_->capacity());
    start_worker();
  }
  const DeviceInfo& info() const override { return info_; }
  std::shared_ptr<BufferStorage> allocate(std::size_t nbytes) override {
    return std::make_shared<sandbox::ArenaStorage>(arena_, nbytes);
  }
  std::string compiler_identity() override { return CpuCompiler::instance().identity(); }
  std::shared_ptr<BackendLibrary> compile(const std::string& source, const CompileOptions& options) override {
    msl::FrontEndOptions front = cpu_front_end_options(options, checked_);
    const bool fast_math = options.fast_math;
    return translated::TranslatedLibrary<SandboxModule>::compile(
        source, std::move(front),
        [fast_math, checked = checked_, link = link_](const msl::Translation& translation, const std::string& user_source) {
          const std::string object = CpuCompiler::instance().build(translation, user_source, fast_math, checked);
          check_kernel_object_bytes("the compiled kernel", std::vector<unsigned char>(object.begin(), object.end()));
          return std::make_shared<SandboxModule>(link, object);
        },
        [checked = checked_, link = link_](const msl::TranslatedKernel& kernel,
                                           const std::shared_ptr<SandboxModule>& module) {
          return sandbox::load_sandbox_program(link, kernel, module, checked);
        });
  }
  void submit(std::vector<DispatchCommand>&& commands, const std::shared_ptr<CompletionState>& completion,
              bool caller_waits) override {
    queue_.submit(std::move(commands), completion, caller_waits);
  }
  void synchronize() override { queue_.synchronize(); }
  void stop_all(const char* reason) override { queue_.stop_all(reason); }
  bool run_now(const DispatchCommand& command, double* seconds) override { return queue_.run_now(command, seconds); }

 private:
  // Now rather than at the first call: a machine where the sandbox cannot work
  // (no seccomp, no worker executable) fails at Device(), saying why.
  void start_worker() {
    std::lock_guard<std::mutex> lock(link_->mutex());
    try {
      link_->ensure_worker();
      sandbox::MessageWriter w = link_->request();
      w.put(sandbox::Op::release);
      w.put<std::uint32_t>(0);
      w.put<std::uint32_t>(0);
      (void)link_->bookkeeping(w.used());
    } catch (const sandbox::WorkerLost& lost) {
      throw DeviceError("[cpu sandbox] the worker process " + lost.why);
    }
  }

  DeviceInfo info_;
  bool checked_;
  std::shared_ptr<sandbox::SharedArena> arena_;
  std::shared_ptr<sandbox::WorkerLink> link_;
  sandbox::SandboxRunner runner_;
  CpuQueue queue_;
};

}  // namespace

bool sandbox_supported() { return true; }

std::shared_ptr<BackendDevice> open_sandbox_device(const DeviceOptions& options, DeviceInfo info) {
  return std::make_shared<SandboxDevice>(options, std::move(info));
}

}  // namespace metalcall::cpu
