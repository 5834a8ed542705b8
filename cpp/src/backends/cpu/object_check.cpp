// The kernel object check (see object_check.hpp): reads the file once through a checked
// descriptor, picks the reader by the file's magic (ELF or 64-bit Mach-O, on any host, so
// both are tested everywhere), and keeps the allowlist both readers share.
#include "backends/cpu/object_check.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <initializer_list>
#include <set>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "backends/cpu/object_check_formats.hpp"
#include "metalcall/errors.hpp"

namespace metalcall::cpu {
namespace object_check {

bool allowed_import(const std::string& name, Format format) {
  // Both formats: memory builtins the compiler may lower to calls (the prelude's
  // __builtin_memcpy, struct copies) and stack protection.
  static const auto& common = *new std::set<std::string>{"memcpy", "memmove", "memset", "memcmp",
                                                         "__stack_chk_fail", "__stack_chk_guard"};
  // ELF: the toolchain's own (crtbegin/crtend weak references) and TLS.
  static const auto& elf = *new std::set<std::string>{
      "_ITM_deregisterTMCloneTable", "_ITM_registerTMCloneTable", "__cxa_finalize", "__gmon_start__",
      "__register_frame_info", "__deregister_frame_info", "_Jv_RegisterClasses", "__tls_get_addr"};
  // Mach-O (C names, the leading underscore removed): what clang emits for Darwin on its own.
  // _tlv_bootstrap: thread_local (every kernel's worker state); __chkstk_darwin: Apple clang's
  // stack probe for frames over a page; __bzero/bzero: memset(p, 0, n) on x86_64/arm64;
  // memset_pattern16: a loop storing one constant (LLVM's loop idiom pass); __sincos(f)_stret:
  // sin and cos of one argument; __exp10(f): pow(10, x). All of them live in libSystem.
  static const auto& macho = *new std::set<std::string>{
      "_tlv_bootstrap", "__chkstk_darwin", "__bzero", "bzero", "memset_pattern16",
      "__sincosf_stret", "__sincos_stret", "__exp10f", "__exp10"};
  if (common.count(name) || (format == Format::elf ? elf : macho).count(name)) return true;
  // ELF, g++: libgcc's helpers for _Float16 (half) that it calls where the processor has no
  // half instructions (comparisons, conversions from double and long double, arithmetic);
  // pure arithmetic, like the compiler's own code.
  static const auto& libgcc_half = *new std::set<std::string>{
      "__eqhf2", "__nehf2", "__lthf2", "__lehf2", "__gthf2", "__gehf2", "__unordhf2",
      "__extendhfsf2", "__extendhfdf2", "__extendhfxf2", "__truncsfhf2", "__truncdfhf2", "__truncxfhf2",
      "__addhf3", "__subhf3", "__mulhf3", "__divhf3", "__neghf2",
      "__floatsihf", "__floatdihf", "__floatunsihf", "__floatundihf", "__fixhfsi", "__fixhfdi", "__fixunshfsi",
      "__fixunshfdi"};
  if (format == Format::elf && libgcc_half.count(name)) return true;
  // libm: the C99 functions the prelude's math lowers to, in double, float and long double.
  static const auto& libm = *new std::set<std::string>{
      "acos", "asin", "atan", "atan2", "cos", "sin", "tan", "acosh", "asinh", "atanh", "cosh", "sinh", "tanh",
      "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "logb", "ilogb", "pow", "sqrt", "cbrt",
      "hypot", "fabs", "floor", "ceil", "trunc", "round", "rint", "nearbyint", "lround", "llround", "lrint",
      "llrint", "fmod", "remainder", "remquo", "fma", "fmax", "fmin", "fdim", "copysign", "frexp", "ldexp",
      "modf", "scalbn", "scalbln", "nextafter", "nexttoward", "erf", "erfc", "tgamma", "lgamma", "sincos",
      "significand", "nan"};
  const auto is_libm = [](const std::string& n) {
    if (libm.count(n)) return true;
    const char last = n.empty() ? '\0' : n.back();
    return (last == 'f' || last == 'l') && libm.count(n.substr(0, n.size() - 1));
  };
  if (is_libm(name)) return true;
  // ELF: glibc's vector variants of those (libmvec, -fveclib=libmvec), named by the x86 vector ABI:
  // _ZGV, the ISA (b SSE, c AVX, d AVX2, e AVX-512), N or M (masked), the lane count, one v per
  // argument, '_', the scalar name (_ZGVdN8v_sinf, _ZGVeN16vv_powf).
  if (format != Format::elf || name.rfind("_ZGV", 0) != 0 || name.size() < 9) return false;
  std::size_t i = 4;
  if (std::string("bcde").find(name[i++]) == std::string::npos) return false;
  if (name[i] != 'N' && name[i] != 'M') return false;
  const std::size_t digits = ++i;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9') ++i;
  const std::size_t vs = i;
  while (i < name.size() && name[i] == 'v') ++i;
  if (vs == digits || vs == i || i >= name.size() || name[i] != '_') return false;  // lanes, one v or more, _
  return is_libm(name.substr(i + 1));
}

void refuse_unreadable(const std::string& path, const std::string& why) {
  throw DeviceError("[cpu] cannot load the compiled kernel " + path + ": " + why);
}

void refuse_import(const std::string& name) {
  throw CompileError("[cpu] the compiled kernel references '" + name +
                     "', which is not part of the kernel runtime (libm, memcpy/memset/memmove and the "
                     "toolchain's own symbols): refused before loading. An MSL kernel calls only its own "
                     "functions and the Metal standard library.");
}

void refuse_initialiser(const std::string& name, const std::string& what, const std::string& when) {
  throw CompileError("[cpu] the compiled kernel has " + what + (name.empty() ? std::string() : " '" + name + "'") +
                     " (code that would run when it is " + when + "): refused before loading. MSL program-scope "
                     "data is constant and initialised by constant expressions.");
}

}  // namespace object_check

namespace {

using object_check::refuse_unreadable;

std::vector<unsigned char> read_regular_file(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) refuse_unreadable(path, std::string("it cannot be opened (") + std::strerror(errno) + ")");
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
      static_cast<std::uint64_t>(st.st_size) > object_check::kMaxObjectSize) {
    close(fd);
    refuse_unreadable(path, "it is not a regular file of a kernel object's size");
  }
  std::vector<unsigned char> bytes(static_cast<std::size_t>(st.st_size));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  close(fd);
  if (done != bytes.size()) refuse_unreadable(path, "it could not be read whole");
  return bytes;
}

bool starts_with(const std::vector<unsigned char>& b, std::initializer_list<unsigned char> magic) {
  return b.size() >= magic.size() && std::equal(magic.begin(), magic.end(), b.begin());
}

}  // namespace

void check_kernel_object(const std::string& path) { check_kernel_object_bytes(path, read_regular_file(path)); }

void check_kernel_object_bytes(const std::string& path, const std::vector<unsigned char>& bytes) {
  if (bytes.empty() || bytes.size() > object_check::kMaxObjectSize) {
    refuse_unreadable(path, "it is not of a kernel object's size");
  }
  if (starts_with(bytes, {0x7f, 'E', 'L', 'F'})) return object_check::check_elf(path, bytes);
  // MH_MAGIC_64, stored little-endian.
  if (starts_with(bytes, {0xcf, 0xfa, 0xed, 0xfe})) return object_check::check_macho(path, bytes);
  // Other Mach-O forms: named, so that a wrong build is told apart from garbage.
  if (starts_with(bytes, {0xca, 0xfe, 0xba, 0xbe}) || starts_with(bytes, {0xca, 0xfe, 0xba, 0xbf}))
    refuse_unreadable(path, "it is a universal (fat) Mach-O file; a kernel object is built for one architecture");
  if (starts_with(bytes, {0xfe, 0xed, 0xfa, 0xcf})) refuse_unreadable(path, "it is a big-endian Mach-O file");
  if (starts_with(bytes, {0xce, 0xfa, 0xed, 0xfe}) || starts_with(bytes, {0xfe, 0xed, 0xfa, 0xce}))
    refuse_unreadable(path, "it is a 32-bit Mach-O file");
  refuse_unreadable(path, "it is not an ELF or Mach-O file");
}

}  // namespace metalcall::cpu
