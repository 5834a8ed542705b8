// metalcall-sandbox-worker: the process in which the sandboxed CPU device compiles
// nothing and runs everything (docs/security.md). Started by the parent (worker_link.cpp)
// with its socket, control page and the Buffers' arena on fixed descriptors and an
// empty environment; it maps them, starts the CPU backend's worker pool, installs the
// system call filter on every thread, then answers requests until the parent goes.
// Kernels run through the CPU backend's own dispatch code (cpu_dispatch.cpp).
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <memory>
#include <string>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <unordered_map>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_dispatch.hpp"
#include "backends/cpu/cpu_program.hpp"
#include "backends/cpu/sandbox/sandbox_filter.hpp"
#include "backends/cpu/sandbox/sandbox_protocol.hpp"
#include "backends/cpu/worker_pool.hpp"
#include "backends/cpu/worker_state.hpp"
#include "metalcall/errors.hpp"

namespace metalcall::cpu::sandbox {
namespace {

// How long the worker spins for the next request before it sleeps: longer than the gap
// between two back-to-back calls from Python, and than the parent's wake-up after a reply
// it slept for, as the worker pool's threads do (worker_pool.cpp).
constexpr std::chrono::microseconds kSpin{100};

// A kernel resolved in a loaded module, before the parent defines its final parameters.
struct Prepared {
  std::string name;
  metalcall_cpu_entry entry = nullptr;
  bool uses_fibers = false;
  bool checked = false;
};

class Worker {
 public:
  Worker(ControlPage* control, unsigned char* arena, std::size_t arena_bytes)
      : control_(control), arena_(arena), arena_bytes_(arena_bytes) {}

  [[noreturn]] void serve() {
    std::uint32_t seen = 0;
    for (;;) {
      seen = wait_for_request(seen);
      const std::size_t bytes = std::min<std::size_t>(control_->request_bytes.load(std::memory_order_acquire),
                                                      kRequestBytes);
      MessageReader request(control_->request, bytes);
      MessageWriter reply(control_->reply, kReplyBytes);
      handle(request, reply);
      control_->reply_bytes.store(static_cast<std::uint32_t>(reply.used()), std::memory_order_relaxed);
      control_->reply_seq.store(seen, std::memory_order_seq_cst);
      if (control_->parent_sleeping.exchange(0, std::memory_order_seq_cst)) wake_parent();
    }
  }

 private:
  ControlPage* control_;
  unsigned char* arena_;
  std::size_t arena_bytes_;
  std::deque<int> received_fds_;
  std::unordered_map<std::uint64_t, void*> modules_;
  std::unordered_map<std::uint64_t, Prepared> prepared_;
  std::unordered_map<std::uint64_t, std::shared_ptr<CpuProgram>> programs_;
  DispatchCommand command_;  // reused by every call

  // ---- transport ----

  // One record from the socket: a wake byte, or a descriptor (kept). Exits when the parent has gone.
  void receive_record() {
    char byte;
    iovec io{&byte, 1};
    alignas(cmsghdr) char space[CMSG_SPACE(sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &io;
    msg.msg_iovlen = 1;
    msg.msg_control = space;
    msg.msg_controllen = sizeof space;
    ssize_t n;
    do n = recvmsg(kSocketFd, &msg, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n <= 0) _exit(0);
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      int fd;
      std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
      received_fds_.push_back(fd);
    }
  }

  int take_fd() {
    while (received_fds_.empty()) receive_record();
    const int fd = received_fds_.front();
    received_fds_.pop_front();
    return fd;
  }

  void wake_parent() {
    const char byte = 'w';
    (void)send(kSocketFd, &byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
  }

  std::uint32_t wait_for_request(std::uint32_t seen) {
    const auto deadline = std::chrono::steady_clock::now() + kSpin;
    for (unsigned turn = 1;; ++turn) {
      const std::uint32_t now = control_->request_seq.load(std::memory_order_acquire);
      if (now != seen) return now;
      pause_or_yield(turn);
      if (turn % 64 == 0 && std::chrono::steady_clock::now() > deadline) break;
    }
    for (;;) {
      // The parent bumps request_seq, then reads worker_sleeping: one of us sees the other.
      control_->worker_sleeping.store(1, std::memory_order_seq_cst);
      const std::uint32_t now = control_->request_seq.load(std::memory_order_seq_cst);
      if (now != seen) {
        control_->worker_sleeping.store(0, std::memory_order_relaxed);
        return now;
      }
      receive_record();
    }
  }

  // ---- requests ----

  static void answer(MessageWriter& reply, Status status, const std::string& message, double seconds = 0) {
    reply.put(status);
    reply.put(seconds);
    reply.put_string(message.size() > 2048 ? message.substr(0, 2048) : message);
  }

  void handle(MessageReader& request, MessageWriter& reply) {
    const Op op = request.get<Op>();
    if (!request.ok()) _exit(kExitProtocol);
    switch (op) {
      case Op::load_module: return load_module(request, reply);
      case Op::prepare_program: return prepare_program(request, reply);
      case Op::define_program: return define_program(request, reply);
      case Op::call: return call(request, reply);
      case Op::release: return release(request, reply);
    }
    _exit(kExitProtocol);
  }

  void load_module(MessageReader& request, MessageWriter& reply) {
    const auto id = request.get<std::uint64_t>();
    const int fd = take_fd();
    if (!request.ok()) _exit(kExitProtocol);
    if (dup3(fd, kObjectFd, O_CLOEXEC) < 0) {
      close(fd);
      return answer(reply, Status::device_error, std::string("cannot place the kernel object: ") + std::strerror(errno));
    }
    close(fd);
    // The parent's writes left the shared file offset at the end; the loader reads from it.
    (void)lseek(kObjectFd, 0, SEEK_SET);
    const std::string path = module_path(id);
    expect_object_open(path.c_str());
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    object_open_done();
    close(kObjectFd);  // the loader has closed it already when it succeeded
    if (!handle) {
      const char* why = dlerror();
      return answer(reply, Status::device_error, std::string("cannot load the compiled kernel: ") + (why ? why : "?"));
    }
    // The loops' stop checks read this process's stop word (kernel_stop.hpp).
    if (auto* stop = static_cast<metalcall_cpu_stop*>(dlsym(handle, msl::kCpuStopSymbol))) *stop = stop_hooks();
    modules_[id] = handle;
    answer(reply, Status::ok, "");
  }

  void prepare_program(MessageReader& request, MessageWriter& reply) {
    const auto module = request.get<std::uint64_t>();
    const auto id = request.get<std::uint64_t>();
    Prepared p;
    p.name = request.get_string(4096);
    const std::string entry_symbol = request.get_string(256);
    const std::string layout_symbol = request.get_string(256);
    p.uses_fibers = request.get<std::uint8_t>() != 0;
    p.checked = request.get<std::uint8_t>() != 0;
    const auto param_count = request.get<std::uint32_t>();
    if (!request.ok()) _exit(kExitProtocol);
    auto it = modules_.find(module);
    if (it == modules_.end()) _exit(kExitProtocol);
    p.entry = reinterpret_cast<metalcall_cpu_entry>(dlsym(it->second, entry_symbol.c_str()));
    const auto* layout = static_cast<const metalcall_cpu_layout*>(dlsym(it->second, layout_symbol.c_str()));
    if (!p.entry || !layout) {
      return answer(reply, Status::device_error, "the compiled kernel '" + p.name + "' lacks its entry point");
    }
    answer(reply, Status::ok, "");
    for (std::uint32_t i = 0; i < param_count; ++i) {
      reply.put<std::uint64_t>(layout[i].size);
      reply.put<std::uint64_t>(layout[i].align);
      reply.put<std::int64_t>(layout[i].binding);
    }
    prepared_[id] = std::move(p);
  }

  void define_program(MessageReader& request, MessageWriter& reply) {
    const auto id = request.get<std::uint64_t>();
    const auto param_count = request.get<std::uint32_t>();
    auto it = prepared_.find(id);
    if (!request.ok() || it == prepared_.end() || param_count > 4096) _exit(kExitProtocol);
    KernelInfo info;
    info.name = it->second.name;
    for (std::uint32_t i = 0; i < param_count; ++i) {
      ParamInfo param;
      param.kind = static_cast<ParamKind>(request.get<std::uint32_t>());
      param.binding = request.get<std::int32_t>();
      param.position = request.get<std::int32_t>();
      if (param.kind == ParamKind::threadgroup_memory && (param.binding < 0 || param.binding > 4096)) _exit(kExitProtocol);
      info.params.push_back(param);
    }
    if (!request.ok()) _exit(kExitProtocol);
    programs_[id] = std::make_shared<CpuProgram>(std::move(info), nullptr, it->second.entry, it->second.uses_fibers,
                                                 it->second.checked);
    prepared_.erase(it);
    answer(reply, Status::ok, "");
  }

  void call(MessageReader& request, MessageWriter& reply) {
    const auto id = request.get<std::uint64_t>();
    DispatchCommand& command = command_;
    for (auto& g : command.grid) g = request.get<std::uint32_t>();
    for (auto& t : command.threadgroup) t = request.get<std::uint32_t>();
    command.poison_threadgroup = request.get<std::uint8_t>() != 0;
    const auto argc = request.get<std::uint32_t>();
    auto it = programs_.find(id);
    if (!request.ok() || it == programs_.end() || argc > 4096) _exit(kExitProtocol);
    command.program = it->second;
    command.args.resize(argc);
    for (std::uint32_t i = 0; i < argc; ++i) {
      BoundArgument& a = command.args[i];
      a.kind = static_cast<ParamKind>(request.get<std::uint32_t>());
      const auto place = request.get<ArgPlace>();
      const auto offset = request.get<std::uint64_t>();
      const auto nbytes = request.get<std::uint64_t>();
      a.host_data = nullptr;
      a.host_nbytes = 0;
      a.threadgroup_length = 0;
      a.bytes.clear();
      if (place == ArgPlace::arena) {
        if (offset > arena_bytes_ || nbytes > arena_bytes_ - offset) _exit(kExitProtocol);
        a.host_data = arena_ + offset;
        a.host_nbytes = nbytes;
      } else if (place == ArgPlace::inline_bytes) {
        const unsigned char* p = request.take(nbytes);
        if (p) a.bytes.assign(p, p + nbytes);
      } else if (place == ArgPlace::threadgroup) {
        a.threadgroup_length = nbytes;
      } else if (place == ArgPlace::texture) {
        const auto texel = request.get<std::uint64_t>();
        const auto descriptor = request.get<std::uint64_t>();
        const unsigned char* p = request.take(descriptor);
        if (!p || offset > arena_bytes_ || nbytes > arena_bytes_ - offset || texel > nbytes ||
            descriptor < sizeof(void*)) {
          _exit(kExitProtocol);
        }
        a.bytes.assign(p, p + descriptor);
        unsigned char* address = arena_ + offset + texel;
        std::memcpy(a.bytes.data(), &address, sizeof address);
        a.host_data = arena_ + offset;  // the kernel's arg_bytes: the storage's length, as in-process
        a.host_nbytes = nbytes;
        // An array of textures: the other descriptors' storage, each texel (0, 0) relocated.
        const auto more = request.get<std::uint32_t>();
        if (!request.ok() || more > 4096 || descriptor % (std::uint64_t(more) + 1) != 0) _exit(kExitProtocol);
        const std::uint64_t stride = descriptor / (std::uint64_t(more) + 1);
        for (std::uint32_t k = 1; k <= more; ++k) {
          const auto at = request.get<std::uint64_t>(), length = request.get<std::uint64_t>(),
                     first = request.get<std::uint64_t>();
          if (!request.ok() || at > arena_bytes_ || length > arena_bytes_ - at || first > length ||
              stride < sizeof(void*))
            _exit(kExitProtocol);
          unsigned char* texel_address = arena_ + at + first;
          std::memcpy(a.bytes.data() + k * stride, &texel_address, sizeof texel_address);
        }
      }
    }
    if (!request.ok()) _exit(kExitProtocol);
    try {
      const double seconds = run_dispatch(command, StopRequest{&control_->cancel});
      answer(reply, Status::ok, "", seconds);
    } catch (const ExecutionError& e) {
      answer(reply, Status::execution_error, e.what());
    } catch (const std::exception& e) {
      answer(reply, Status::device_error, e.what());
    }
  }

  void release(MessageReader& request, MessageWriter& reply) {
    const auto programs = request.get<std::uint32_t>();
    for (std::uint32_t i = 0; i < programs && request.ok(); ++i) {
      const auto id = request.get<std::uint64_t>();
      programs_.erase(id);
      prepared_.erase(id);
    }
    const auto modules = request.get<std::uint32_t>();
    for (std::uint32_t i = 0; i < modules && request.ok(); ++i) {
      auto it = modules_.find(request.get<std::uint64_t>());
      if (it == modules_.end()) continue;
      dlclose(it->second);
      modules_.erase(it);
    }
    if (!request.ok()) _exit(kExitProtocol);
    answer(reply, Status::ok, "");
  }
};

// ---- start-up, before the filter ----

[[noreturn]] void start_failed(ControlPage* control, const std::string& why) {
  if (control) {
    MessageWriter reply(control->reply, kReplyBytes);
    reply.put(Status::device_error);
    reply.put(0.0);
    reply.put_string(why);
    control->reply_bytes.store(static_cast<std::uint32_t>(reply.used()), std::memory_order_seq_cst);
  }
  _exit(kExitStartFailed);
}

// Descriptors the parent's process may have leaked into this one (not close-on-exec).
void close_inherited_descriptors() {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, kObjectFd, ~0u, 0) == 0) return;
#endif
  std::vector<int> open_fds;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (dirent* entry = readdir(dir)) {
      const int fd = std::atoi(entry->d_name);
      if (fd >= kObjectFd && fd != dirfd(dir)) open_fds.push_back(fd);
    }
    closedir(dir);
  }
  for (int fd : open_fds) close(fd);
}

void* map_descriptor(int fd, std::size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  close(fd);
  return p == MAP_FAILED ? nullptr : p;
}

// Libraries a kernel object may need (g++ and clang link these into shared objects): loaded
// now, when the loader may still open files, so that dlopen later finds them by name.
void preload_runtime_libraries() {
  for (const char* name : {"libm.so.6", "libmvec.so.1", "libstdc++.so.6", "libgcc_s.so.1", "libc++.so.1", "libc++abi.so.1"})
    (void)dlopen(name, RTLD_NOW | RTLD_GLOBAL);
  (void)dlerror();
}

// Each pool thread runs one chunk of a job and waits there until every thread has come:
// a thread still starting (glibc sets it up with every signal blocked) must not meet the
// filter, or its first set-up call would end the process.
struct Muster {
  std::atomic<unsigned> arrived{0};
  unsigned expected = 0;
  std::atomic<bool> complete{false};
};

bool muster(void* context, std::uint64_t, std::uint64_t, unsigned worker) {
  auto* m = static_cast<Muster*>(context);
  (void)WorkerState::of(worker);
  m->arrived.fetch_add(1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (m->arrived.load() < m->expected) {
    if (std::chrono::steady_clock::now() > deadline) return true;
    std::this_thread::yield();
  }
  m->complete.store(true);
  return true;
}

}  // namespace
}  // namespace metalcall::cpu::sandbox

int main(int argc, char** argv) {
  using namespace metalcall::cpu::sandbox;
  // argv[1]: the parent's process id. The parent-death signal fires when the parent's
  // spawning thread ends, which lives as long as the parent process (worker_link.cpp).
  if (argc < 2) return kExitStartFailed;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != static_cast<pid_t>(std::atoll(argv[1]))) _exit(0);
  close_inherited_descriptors();
  // No core file: it would write the worker's memory (the Buffers) to disk.
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  prctl(PR_SET_DUMPABLE, 0);

  auto* control = static_cast<ControlPage*>(map_descriptor(kControlFd, kControlBytes));
  if (!control) _exit(kExitStartFailed);
  struct stat arena_stat {};
  if (fstat(kArenaFd, &arena_stat) != 0 || arena_stat.st_size <= 0) start_failed(control, "no arena descriptor");
  const auto arena_bytes = static_cast<std::size_t>(arena_stat.st_size);
  auto* arena = static_cast<unsigned char*>(map_descriptor(kArenaFd, arena_bytes));
  if (!arena) start_failed(control, std::string("cannot map the Buffers' memory: ") + std::strerror(errno));

  preload_runtime_libraries();
  // Every thread the worker will ever have, and each one's state, exist before the filter.
  auto& pool = metalcall::cpu::WorkerPool::instance();
  Muster all;
  all.expected = pool.size();
  pool.parallel_for(pool.size(), 1, muster, &all);
  if (!all.complete.load()) start_failed(control, "the worker pool's threads did not start");

  // The thread that stops kernels in their loops when the parent cancels (kernel_stop.hpp).
  metalcall::cpu::start_stop_watchdog();
  const std::string failed = install_filter(control);
  if (!failed.empty()) start_failed(control, "cannot install the system call filter: " + failed);
  Worker(control, arena, arena_bytes).serve();
}
