// The sandbox worker's seccomp-bpf filter and its SIGSYS handler (see sandbox_filter.hpp).
//
// What the worker may do once the filter is on: compute, wait on and wake its own
// threads (futex), manage its memory (mmap, munmap, mprotect, madvise, brk), read the
// clock, talk to the parent over the socket it was given, and end. The kernels it runs
// are native code, so the filter assumes they are hostile: what protects the host is
// that no call reaches a file, the network, another process or a new program. The
// descriptors the worker holds (its socket, /dev/null, a kernel object being loaded)
// are chosen by the parent, so reading, writing and mapping them is allowed; no call
// that makes a new descriptor from a name is (open, socket, ...).
//
// Executable memory: only the kernel object at kObjectFd may be mapped executable, and
// never writable at the same time; mprotect cannot add execute permission. The
// kernels' own code is as hostile as anything they could write there, so this is
// defence in depth, not the boundary.
//
// dlopen() must open the object by name: openat() and newfstatat() trap into the
// handler, which emulates exactly what the loader needs (the object's descriptor for
// its one expected name; fstat of an open descriptor) and treats anything else as a
// violation. The handler grants nothing a kernel could not already do.
#include "backends/cpu/sandbox/sandbox_filter.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstring>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>
#include <vector>

namespace metalcall::cpu::sandbox {

namespace {

#if defined(__x86_64__)
constexpr std::uint32_t kAuditArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr std::uint32_t kAuditArch = AUDIT_ARCH_AARCH64;
#else
constexpr std::uint32_t kAuditArch = 0;  // the sandbox does not support this architecture
#endif

ControlPage* g_control = nullptr;
std::atomic<const char*> g_expected_path{nullptr};
std::atomic<bool> g_loading{false};

// System calls allowed whatever their arguments. Not `exit`: the worker's threads never end
// alone, and a kernel ending the thread that answers the parent would leave it waiting.
const std::vector<long>& plain_allowed() {
  static const auto& calls = *new std::vector<long>{
      SYS_read, SYS_pread64, SYS_write, SYS_writev, SYS_close, SYS_fstat, SYS_lseek, SYS_dup3,
      SYS_recvmsg, SYS_recvfrom, SYS_sendmsg, SYS_sendto,
      SYS_munmap, SYS_mremap, SYS_madvise, SYS_brk,
      SYS_sched_yield, SYS_nanosleep, SYS_clock_nanosleep, SYS_clock_gettime, SYS_clock_getres,
      SYS_gettimeofday, SYS_getpid, SYS_gettid, SYS_getcpu, SYS_sched_getaffinity, SYS_getrandom,
      SYS_rt_sigprocmask, SYS_rt_sigreturn, SYS_restart_syscall, SYS_exit_group,
#ifdef SYS_time
      SYS_time,
#endif
  };
  return calls;
}

// The argument words of seccomp_data (args[i]'s low 32 bits: the kernel's int arguments).
constexpr std::uint32_t arg_low(int i) {
  return static_cast<std::uint32_t>(offsetof(seccomp_data, args) + 8 * i
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
                                    + 4
#endif
  );
}

class Program {
 public:
  void load(std::uint32_t offset) { code_.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset)); }
  void ret(std::uint32_t action) { code_.push_back(BPF_STMT(BPF_RET | BPF_K, action)); }
  void jump_eq(std::uint32_t k, unsigned char if_true, unsigned char if_false) {
    code_.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k, if_true, if_false));
  }
  void jump_set(std::uint32_t k, unsigned char if_true, unsigned char if_false) {
    code_.push_back(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, k, if_true, if_false));
  }
  void and_with(std::uint32_t k) { code_.push_back(BPF_STMT(BPF_ALU | BPF_AND | BPF_K, k)); }
  void jump_ge(std::uint32_t k, unsigned char if_true, unsigned char if_false) {
    code_.push_back(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, k, if_true, if_false));
  }
  std::vector<sock_filter>& code() { return code_; }

 private:
  std::vector<sock_filter> code_;
};

constexpr std::uint32_t kNr = offsetof(seccomp_data, nr);

std::vector<sock_filter> build_filter(pid_t self) {
  Program p;
  p.load(offsetof(seccomp_data, arch));
  p.jump_eq(kAuditArch, 1, 0);
  p.ret(SECCOMP_RET_KILL_PROCESS);
  p.load(kNr);
#if defined(__x86_64__)
  p.jump_ge(0x40000000u, 0, 1);  // x32 system calls
  p.ret(SECCOMP_RET_KILL_PROCESS);
#endif
  for (long call : plain_allowed()) {
    p.jump_eq(static_cast<std::uint32_t>(call), 0, 1);
    p.ret(SECCOMP_RET_ALLOW);
  }
  // mmap: executable only from kObjectFd, and then not writable.
  p.jump_eq(SYS_mmap, 0, 7);
  p.load(arg_low(2));
  p.jump_set(PROT_EXEC, 0, 4);
  p.jump_set(PROT_WRITE, 2, 0);
  p.load(arg_low(4));
  p.jump_eq(kObjectFd, 1, 0);
  p.ret(SECCOMP_RET_TRAP);
  p.ret(SECCOMP_RET_ALLOW);
  // mprotect: never adds execute permission.
  p.load(kNr);
  p.jump_eq(SYS_mprotect, 0, 4);
  p.load(arg_low(2));
  p.jump_set(PROT_EXEC, 1, 0);
  p.ret(SECCOMP_RET_ALLOW);
  p.ret(SECCOMP_RET_TRAP);
  // tgkill: only this process (abort() signals itself).
  p.load(kNr);
  p.jump_eq(SYS_tgkill, 0, 4);
  p.load(arg_low(0));
  p.jump_eq(static_cast<std::uint32_t>(self), 0, 1);
  p.ret(SECCOMP_RET_ALLOW);
  p.ret(SECCOMP_RET_TRAP);
  // futex: the operations threads wait and wake with (FUTEX_WAIT..WAKE_OP, WAIT/WAKE_BITSET),
  // not the priority-inheritance ones, whose kernel code has the longest history of
  // privilege escalations (browsers' renderer filters refuse them too); nothing here uses them.
  p.load(kNr);
  p.jump_eq(SYS_futex, 0, 7);
  p.load(arg_low(1));
  p.and_with(FUTEX_CMD_MASK & 0xff);  // the operation, without FUTEX_PRIVATE_FLAG / CLOCK_REALTIME
  p.jump_ge(FUTEX_LOCK_PI, 0, 3);     // WAIT, WAKE, FD, REQUEUE, CMP_REQUEUE, WAKE_OP
  p.jump_eq(FUTEX_WAIT_BITSET, 2, 0);
  p.jump_eq(FUTEX_WAKE_BITSET, 1, 0);
  p.ret(SECCOMP_RET_TRAP);
  p.ret(SECCOMP_RET_ALLOW);
  // Everything else, openat and newfstatat included, goes to the handler.
  p.ret(SECCOMP_RET_TRAP);
  return std::move(p.code());
}

long raw_result(long r) { return r == -1 ? -errno : r; }

[[noreturn]] void violation(long number) {
  if (g_control) g_control->violation.store(static_cast<std::uint32_t>(number) + 1, std::memory_order_seq_cst);
  syscall(SYS_exit_group, kExitViolation);
  __builtin_unreachable();
}

long emulate_openat(const long* args) {
  const char* path = reinterpret_cast<const char*>(args[1]);
  if (!g_loading.load(std::memory_order_acquire)) violation(SYS_openat);
  const char* expected = g_expected_path.exchange(nullptr, std::memory_order_acq_rel);
  if (expected && path && std::strcmp(path, expected) == 0) return kObjectFd;
  if (expected) g_expected_path.store(expected, std::memory_order_release);
  return -ENOENT;
}

long emulate_newfstatat(const long* args) {
  const char* path = reinterpret_cast<const char*>(args[1]);
  const int flags = static_cast<int>(args[3]);
  // fstat(fd) as glibc spells it: an empty path relative to the descriptor.
  if (!path || path[0] != '\0' || !(flags & AT_EMPTY_PATH)) violation(SYS_newfstatat);
  return raw_result(syscall(SYS_fstat, static_cast<int>(args[0]), reinterpret_cast<void*>(args[2])));
}

void on_sigsys(int, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  auto* uc = static_cast<ucontext_t*>(context);
  long args[6];
#if defined(__x86_64__)
  greg_t* regs = uc->uc_mcontext.gregs;
  const int order[6] = {REG_RDI, REG_RSI, REG_RDX, REG_R10, REG_R8, REG_R9};
  for (int i = 0; i < 6; ++i) args[i] = static_cast<long>(regs[order[i]]);
#elif defined(__aarch64__)
  for (int i = 0; i < 6; ++i) args[i] = static_cast<long>(uc->uc_mcontext.regs[i]);
#else
  (void)uc;
  (void)args;
  violation(info->si_syscall);
#endif
  long result;
  if (info->si_syscall == SYS_openat) result = emulate_openat(args);
  else if (info->si_syscall == SYS_newfstatat) result = emulate_newfstatat(args);
  else violation(info->si_syscall);
#if defined(__x86_64__)
  regs[REG_RAX] = result;
#elif defined(__aarch64__)
  uc->uc_mcontext.regs[0] = static_cast<unsigned long>(result);
#endif
  errno = saved_errno;
}

}  // namespace

void expect_object_open(const char* path) {
  g_expected_path.store(path, std::memory_order_release);
  g_loading.store(true, std::memory_order_release);
}

void object_open_done() {
  g_loading.store(false, std::memory_order_release);
  g_expected_path.store(nullptr, std::memory_order_release);
}

std::string install_filter(ControlPage* control) {
  if (kAuditArch == 0) return "the sandbox supports x86-64 and arm64 Linux only";
  g_control = control;
  struct sigaction action {};
  action.sa_sigaction = on_sigsys;
  action.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&action.sa_mask);
  if (sigaction(SIGSYS, &action, nullptr) != 0) return std::string("sigaction(SIGSYS): ") + std::strerror(errno);
  sigset_t sys;
  sigemptyset(&sys);
  sigaddset(&sys, SIGSYS);
  pthread_sigmask(SIG_UNBLOCK, &sys, nullptr);
  std::vector<sock_filter> code = build_filter(getpid());
  sock_fprog program{};
  program.len = static_cast<unsigned short>(code.size());
  program.filter = code.data();
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return std::string("PR_SET_NO_NEW_PRIVS: ") + std::strerror(errno);
  // TSYNC: the worker pool's threads, started before, get the filter too.
  const long rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program);
  if (rc != 0) {
    return rc > 0 ? "thread " + std::to_string(rc) + " could not take the system call filter"
                  : std::string("seccomp(SECCOMP_SET_MODE_FILTER): ") + std::strerror(errno) +
                        " (a kernel without seccomp filters, or a container that forbids them)";
  }
  return "";
}

}  // namespace metalcall::cpu::sandbox
