// Starting the sandbox worker (see worker_spawn.hpp).
//
// posix_spawn, not fork: the worker must not start as a copy of this process (a
// Python interpreter with every secret it holds, and threads that a fork would
// freeze mid-lock); it is a small executable of its own, installed beside the library.
#include "backends/cpu/sandbox/worker_spawn.hpp"

#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <functional>
#include <mutex>
#include <new>
#include <spawn.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "backends/cpu/fork_guard.hpp"
#include "backends/cpu/sandbox/sandbox_protocol.hpp"
#include "metalcall/errors.hpp"

namespace metalcall::cpu::sandbox {

namespace {

constexpr const char* kExecutableName = "metalcall-sandbox-worker";

bool executable_file(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

// A thread that lives for the process and runs the spawns: the worker's parent-death
// signal (PR_SET_PDEATHSIG) fires when the thread that started it ends, and a Python
// thread that made the first call may end long before the process.
class Spawner {
 public:
  static Spawner& instance() {
    static Spawner* spawner = new Spawner;  // never destroyed: its thread is detached
    return *spawner;
  }

  pid_t run(const std::function<pid_t()>& spawn) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!started_) {
      started_ = true;
      std::thread([this] { loop(); }).detach();
    }
    cv_.wait(lock, [&] { return !job_; });
    pid_t pid = -1;
    bool done = false;
    job_ = [&] {
      pid = spawn();
      done = true;
    };
    cv_.notify_all();
    cv_.wait(lock, [&] { return done; });
    return pid;
  }

 private:
  Spawner() {
    // A forked child has no spawner thread: it starts one on first use.
    reset_on_fork(this, [](void* self) {
      auto* s = static_cast<Spawner*>(self);
      new (&s->mutex_) std::mutex;
      new (&s->cv_) std::condition_variable;
      s->started_ = false;
      s->job_ = nullptr;
    });
  }

  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      cv_.wait(lock, [&] { return static_cast<bool>(job_); });
      job_();
      job_ = nullptr;
      cv_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  bool started_ = false;
  std::function<void()> job_;
};

}  // namespace

std::string worker_executable() {
  if (const char* env = std::getenv("METALCALL_SANDBOX_WORKER"); env && *env) return executable_file(env) ? env : "";
  // Beside the binary that holds this code: the Python package's folder (_core), or the
  // lib/ folder of a C++ install (then ../bin).
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&worker_executable), &info) || !info.dli_fname) return "";
  std::string folder = info.dli_fname;
  const std::size_t slash = folder.rfind('/');
  folder = slash == std::string::npos ? "." : folder.substr(0, slash);
  for (const std::string& candidate : {folder + "/" + kExecutableName, folder + "/../bin/" + kExecutableName}) {
    if (executable_file(candidate)) return candidate;
  }
  return "";
}

pid_t spawn_worker(const std::string& executable, int socket, int control, int arena) {
  // Above the worker's fixed descriptors, so that each dup2 below really moves one
  // (a dup2 onto itself would keep close-on-exec set).
  const int sources[3] = {socket, control, arena};
  int moved[3] = {-1, -1, -1};
  for (int i = 0; i < 3; ++i) moved[i] = fcntl(sources[i], F_DUPFD_CLOEXEC, 16);
  auto close_moved = [&] {
    for (int fd : moved)
      if (fd >= 0) close(fd);
  };
  if (moved[0] < 0 || moved[1] < 0 || moved[2] < 0) {
    const int error = errno;
    close_moved();
    throw DeviceError(std::string("[cpu sandbox] cannot pass descriptors to the worker: ") + std::strerror(error));
  }
  const std::string parent = std::to_string(getpid());
  int error = 0;  // errno is the spawner thread's
  const pid_t pid = Spawner::instance().run([&]() -> pid_t {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, moved[0], kSocketFd);
    posix_spawn_file_actions_adddup2(&actions, moved[1], kControlFd);
    posix_spawn_file_actions_adddup2(&actions, moved[2], kArenaFd);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setsigdefault(&attributes, &all);  // Python ignores SIGPIPE; the worker need not
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    std::vector<char*> argv = {const_cast<char*>(executable.c_str()), const_cast<char*>(parent.c_str()), nullptr};
    char* envp[] = {nullptr};  // nothing of this process's environment (tokens, paths) reaches kernels
    pid_t child = -1;
    error = posix_spawn(&child, executable.c_str(), &actions, &attributes, argv.data(), envp);
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    return error == 0 ? child : -1;
  });
  close_moved();
  if (pid <= 0) {
    throw DeviceError("[cpu sandbox] cannot start the worker " + executable + ": " + std::strerror(error));
  }
  return pid;
}

}  // namespace metalcall::cpu::sandbox
