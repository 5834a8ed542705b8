// Kernels of the sandboxed CPU device (see sandbox_programs.hpp).
#include "backends/cpu/sandbox/sandbox_programs.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

#include "backends/translated/translated_library.hpp"
#include "metalcall/errors.hpp"

namespace metalcall::cpu::sandbox {

namespace {

std::atomic<std::uint64_t> g_next_id{1};

void expect_ok(const Reply& reply, const std::string& what) {
  if (reply.status != Status::ok) throw DeviceError("[cpu sandbox] " + what + ": " + reply.message);
}

// Resolves the kernel's symbols in the worker; returns its layout table (one entry per parameter).
std::vector<metalcall_cpu_layout> prepare(WorkerLink& link, std::uint64_t module, std::uint64_t id,
                                          const std::string& name, const KernelSymbols& symbols,
                                          std::size_t param_count) {
  MessageWriter w = link.request();
  w.put(Op::prepare_program);
  w.put(module);
  w.put(id);
  w.put_string(name);
  w.put_string(symbols.entry);
  w.put_string(symbols.layout);
  w.put<std::uint8_t>(symbols.uses_fibers);
  w.put<std::uint8_t>(symbols.checked);
  w.put(static_cast<std::uint32_t>(param_count));
  const Reply reply = link.bookkeeping(w.used());
  expect_ok(reply, "cannot prepare kernel '" + name + "'");
  // The worker's numbers are checked before anything here relies on them.
  MessageReader r(reply.payload.data(), reply.payload.size());
  std::vector<metalcall_cpu_layout> layout(param_count);
  for (auto& entry : layout) {
    const auto size = r.get<std::uint64_t>(), align = r.get<std::uint64_t>();
    const auto binding = r.get<std::int64_t>();
    if (size > (std::uint64_t(1) << 30) || align > 4096 || (align & (align - 1)) != 0) {
      throw DeviceError("[cpu sandbox] the worker gave a malformed layout for kernel '" + name + "'");
    }
    entry.size = static_cast<unsigned long>(size);
    entry.align = static_cast<unsigned long>(align);
    entry.binding = static_cast<long>(binding);
  }
  if (!r.ok()) throw DeviceError("[cpu sandbox] the worker gave a short layout for kernel '" + name + "'");
  return layout;
}

// Gives the worker the kernel's final parameters: it can be called.
void define(WorkerLink& link, std::uint64_t id, const KernelInfo& info) {
  MessageWriter w = link.request();
  w.put(Op::define_program);
  w.put(id);
  w.put(static_cast<std::uint32_t>(info.params.size()));
  for (const ParamInfo& p : info.params) {
    w.put(static_cast<std::uint32_t>(p.kind));
    w.put(static_cast<std::int32_t>(p.binding));
    w.put(static_cast<std::int32_t>(p.position));
  }
  if (!w.ok()) throw DeviceError("[cpu sandbox] kernel '" + info.name + "' has too many parameters");
  expect_ok(link.bookkeeping(w.used()), "cannot define kernel '" + info.name + "'");
}

}  // namespace

SandboxModule::SandboxModule(std::shared_ptr<WorkerLink> link, const std::string& object)
    : link_(std::move(link)), id_(g_next_id.fetch_add(1)) {
  fd_ = memfd_create("metalcall-kernel", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  bool ok = fd_ >= 0;
  for (std::size_t done = 0; ok && done < object.size();) {
    const ssize_t n = write(fd_, object.data() + done, object.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<std::size_t>(n);
  }
  // Sealed: what the worker maps is exactly what was checked.
  ok = ok && fcntl(fd_, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0;
  if (!ok) {
    const int error = errno;
    if (fd_ >= 0) close(fd_);
    throw DeviceError(std::string("[cpu sandbox] cannot keep the compiled kernel in memory: ") + std::strerror(error));
  }
}

SandboxModule::~SandboxModule() {
  link_->forget_module(id_);
  close(fd_);
}

void SandboxModule::make_ready(WorkerLink& link) {
  if (link.has_module(id_)) return;
  MessageWriter w = link.request();
  w.put(Op::load_module);
  w.put(id_);
  link.attach(fd_);
  expect_ok(link.bookkeeping(w.used()), "cannot load the compiled kernel");
  link.add_module(id_);
}

void SandboxProgram::make_ready(WorkerLink& link) {
  if (link.has_program(id_)) return;
  module_->make_ready(link);
  (void)prepare(link, module_->id(), id_, info_.name, symbols_, info_.params.size());
  define(link, id_, info_);
  link.add_program(id_);
}

std::shared_ptr<Program> load_sandbox_program(const std::shared_ptr<WorkerLink>& link, const msl::TranslatedKernel& kernel,
                                              const std::shared_ptr<SandboxModule>& module, bool checked) {
  KernelInfo info = kernel.info;
  KernelSymbols symbols{kernel.entry_symbol, kernel.layout_symbol, kernel.uses_fibers, checked};
  const std::uint64_t id = g_next_id.fetch_add(1);
  std::lock_guard<std::mutex> lock(link->mutex());
  try {
    link->ensure_worker();
    link->send_releases();
    module->make_ready(*link);
    const std::vector<metalcall_cpu_layout> layout = prepare(*link, module->id(), id, info.name, symbols, info.params.size());
    translated::apply_layout(info, layout.data());
    // At most the device's 1024, whatever the kernel declares (cpu_compiler.cpp).
    info.max_total_threads_per_threadgroup = info.declared_max_threads ? std::min(info.declared_max_threads, 1024u) : 1024;
    info.threads_synchronise = kernel.uses_fibers || kernel.runs_regions;
    info.thread_schedule = kernel.runs_regions ? "regions" : kernel.uses_fibers ? "fibers" : "loop";
    auto program = std::make_shared<SandboxProgram>(info, module, id, std::move(symbols), link);
    define(*link, id, info);
    link->add_program(id);
    return program;
  } catch (const WorkerLost& lost) {
    // Loading runs the object's code (its initialisers) in the worker.
    throw ExecutionError("[cpu sandbox] the worker " + lost.why + " while loading kernel '" + info.name +
                         "'; a new worker takes the next call");
  }
}

}  // namespace metalcall::cpu::sandbox
