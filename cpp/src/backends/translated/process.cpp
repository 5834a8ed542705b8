#include "backends/translated/process.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "msl/verify/verifier_stack.hpp"

extern char** environ;

namespace metalcall::translated {

std::string find_program(const std::string& program) {
  auto executable = [](const std::string& p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(p.c_str(), X_OK) == 0;
  };
  if (program.find('/') != std::string::npos) return executable(program) ? program : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    if (dir.empty()) dir = ".";
    if (executable(dir + "/" + program)) return dir + "/" + program;
    start = end + 1;
  }
  return "";
}

namespace {

// Limits set on the child right after it started: the driver has not yet read its
// arguments, let alone started the compiler proper, which inherits them (there is no
// posix_spawn attribute for resource limits).
void limit_child(pid_t pid, const ProcessLimits& limits) {
#if defined(__linux__)
  constexpr rlim_t kStackCap = rlim_t(msl::verify::kCompilerStackBytes);
  struct rlimit limit;
  if (limits.address_space) {
    limit.rlim_cur = limit.rlim_max = static_cast<rlim_t>(limits.address_space);
    prlimit(pid, RLIMIT_AS, &limit, nullptr);
  }
  if (limits.file_bytes) {
    limit.rlim_cur = limit.rlim_max = static_cast<rlim_t>(limits.file_bytes);
    prlimit(pid, RLIMIT_FSIZE, &limit, nullptr);
  }
  // The compiler's recursion follows the code's nesting: its stack is capped, so that the
  // translation verifier's far larger one parses whatever it built (msl/verify/verifier_stack.hpp).
  if (getrlimit(RLIMIT_STACK, &limit) == 0 && (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur > kStackCap)) {
    limit.rlim_cur = kStackCap;
    prlimit(pid, RLIMIT_STACK, &limit, nullptr);
  }
  // A compiler proper left running after its driver was killed at the wall-clock limit ends too.
  if (limits.wall_seconds > 0) {
    limit.rlim_cur = limit.rlim_max = static_cast<rlim_t>(std::ceil(limits.wall_seconds)) + 1;
    prlimit(pid, RLIMIT_CPU, &limit, nullptr);
  }
#else
  (void)pid;
  (void)limits;
#endif
}

}  // namespace

bool ran_out_of_memory(const ProcessResult& result) {
  if (result.exit_code == 0) return false;
  // What g++ (cc1plus), clang and glibc print when an allocation or a mapping fails, and a
  // driver whose compiler proper died of it.
  for (const char* sign : {"virtual memory exhausted", "out of memory allocating", "LLVM ERROR: out of memory",
                           "std::bad_alloc", "annot allocate memory", "failed to map segment",
                           "unable to execute command"}) {
    if (result.output.find(sign) != std::string::npos) return true;
  }
  return false;
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessLimits& limits,
                          const std::vector<std::pair<std::string, std::string>>& environment) {
  ProcessResult result;
  // Pipe 0 takes what it prints (stdout and stderr together, or stderr alone when its
  // standard output is kept apart in pipe 1).
  const bool apart = limits.standard_output_bytes > 0;
  int fds[2][2] = {{-1, -1}, {-1, -1}};
  if (pipe(fds[0]) != 0 || (apart && pipe(fds[1]) != 0)) {
    for (auto& p : fds)
      for (int fd : p)
        if (fd >= 0) close(fd);
    result.output = "cannot create a pipe";
    return result;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addclose(&actions, fds[0][0]);
  posix_spawn_file_actions_adddup2(&actions, apart ? fds[1][1] : fds[0][1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[0][1], 2);
  posix_spawn_file_actions_addclose(&actions, fds[0][1]);
  if (apart) {
    posix_spawn_file_actions_addclose(&actions, fds[1][0]);
    posix_spawn_file_actions_addclose(&actions, fds[1][1]);
  }
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);

  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // This process's environment, with the given variables replaced or added.
  std::vector<std::string> assignments;
  for (const auto& [name, value] : environment) assignments.push_back(name + "=" + value);
  std::vector<char*> env;
  for (char** e = environ; e && *e; ++e) {
    bool replaced = false;
    for (const auto& [name, value] : environment)
      replaced = replaced || (std::strncmp(*e, name.c_str(), name.size()) == 0 && (*e)[name.size()] == '=');
    if (!replaced) env.push_back(*e);
  }
  for (auto& a : assignments) env.push_back(&a[0]);
  env.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0].c_str(), &actions, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[0][1]);
  if (apart) close(fds[1][1]);
  if (rc != 0) {
    close(fds[0][0]);
    if (apart) close(fds[1][0]);
    result.output = "cannot start " + argv[0];
    return result;
  }
  limit_child(pid, limits);
  using Clock = std::chrono::steady_clock;
  const bool timed = limits.wall_seconds > 0;
  const Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timed ? limits.wall_seconds : 0));
  struct pollfd polled[2] = {{fds[0][0], POLLIN, 0}, {apart ? fds[1][0] : -1, POLLIN, 0}};
  char buffer[65536];
  // Its children (a compiler proper) may hold the pipes open after it was killed: stop reading then.
  auto stop = [&] {
    kill(pid, SIGKILL);
    polled[0].fd = polled[1].fd = -1;
  };
  while (polled[0].fd >= 0 || polled[1].fd >= 0) {
    int wait_ms = -1;
    if (timed) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) {
        result.timed_out = true;
        stop();
        break;
      }
      wait_ms = static_cast<int>(std::min<long long>(left, 1000));
    }
    const int ready = poll(polled, 2, wait_ms);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    for (int k = 0; k < 2; ++k) {
      if (polled[k].fd < 0 || !(polled[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = read(polled[k].fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        polled[k].fd = -1;  // its end of the pipe closed
        continue;
      }
      if (k == 0) {
        const std::size_t room = kMaxProcessOutput - std::min(kMaxProcessOutput, result.output.size());
        result.output.append(buffer, std::min(room, static_cast<std::size_t>(n)));
      } else if (result.standard_output.size() + static_cast<std::size_t>(n) > limits.standard_output_bytes) {
        result.output_overflow = true;
        stop();
      } else {
        result.standard_output.append(buffer, static_cast<std::size_t>(n));
      }
    }
  }
  close(fds[0][0]);
  if (apart) close(fds[1][0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return result;
}

}  // namespace metalcall::translated
