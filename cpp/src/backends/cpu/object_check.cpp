// The kernel object check (see object_check.hpp): a small reader of Elf64 headers,
// section headers, the dynamic symbol table and .init_array, written here so that the
// check needs no libelf. Every offset read from the file is bounds-checked.
#include "backends/cpu/object_check.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "metalcall/errors.hpp"

namespace metalcall::cpu {

#if defined(__APPLE__)

// Mach-O objects: not read (the ELF reader below does not apply); the front end's
// MSL rules are the wall on macOS.
void check_kernel_object(const std::string&) {}

#else

namespace {

constexpr std::size_t kMaxObjectSize = 256u << 20;  // kernels are kilobytes; more is not ours

// An object that cannot be read as ELF: a DeviceError, like a failed dlopen. What the
// checks refuse in a readable object is a CompileError naming the symbol.
[[noreturn]] void refuse(const std::string& path, const std::string& why) {
  throw DeviceError("[cpu] cannot load the compiled kernel " + path + ": " + why);
}

// Undefined symbols a kernel object may reference.
bool allowed_undefined(const std::string& name) {
  // The toolchain's own (crtbegin/crtend weak references), TLS and stack protection.
  static const auto& runtime = *new std::set<std::string>{
      "_ITM_deregisterTMCloneTable", "_ITM_registerTMCloneTable", "__cxa_finalize", "__gmon_start__",
      "__register_frame_info", "__deregister_frame_info", "_Jv_RegisterClasses", "__tls_get_addr",
      "__stack_chk_fail", "__stack_chk_guard",
      // memory builtins the compiler may lower to calls (the prelude's __builtin_memcpy, struct copies)
      "memcpy", "memmove", "memset", "memcmp"};
  if (runtime.count(name)) return true;
  // libm: the C99 functions the prelude's math lowers to, in double, float and long double.
  static const auto& libm = *new std::set<std::string>{
      "acos", "asin", "atan", "atan2", "cos", "sin", "tan", "acosh", "asinh", "atanh", "cosh", "sinh", "tanh",
      "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "logb", "ilogb", "pow", "sqrt", "cbrt",
      "hypot", "fabs", "floor", "ceil", "trunc", "round", "rint", "nearbyint", "lround", "llround", "lrint",
      "llrint", "fmod", "remainder", "remquo", "fma", "fmax", "fmin", "fdim", "copysign", "frexp", "ldexp",
      "modf", "scalbn", "scalbln", "nextafter", "nexttoward", "erf", "erfc", "tgamma", "lgamma", "sincos",
      "significand", "nan"};
  if (libm.count(name)) return true;
  const char last = name.empty() ? '\0' : name.back();
  if ((last == 'f' || last == 'l') && libm.count(name.substr(0, name.size() - 1))) return true;
  return false;
}

// crtbegin's entries: frame_dummy (GCC's crtbegin), __do_init (compiler-rt's).
bool toolchain_initialiser(const std::string& name) { return name == "frame_dummy" || name == "__do_init"; }

struct Elf64Header {
  unsigned char ident[16];
  std::uint16_t type, machine;
  std::uint32_t version;
  std::uint64_t entry, phoff, shoff;
  std::uint32_t flags;
  std::uint16_t ehsize, phentsize, phnum, shentsize, shnum, shstrndx;
};

struct Elf64Section {
  std::uint32_t name, type;
  std::uint64_t flags, addr, offset, size;
  std::uint32_t link, info;
  std::uint64_t addralign, entsize;
};

struct Elf64Symbol {
  std::uint32_t name;
  unsigned char info, other;
  std::uint16_t shndx;
  std::uint64_t value, size;
};

constexpr std::uint32_t kSymtab = 2, kDynsym = 11, kInitArray = 14, kPreinitArray = 16;

class ElfReader {
 public:
  ElfReader(const std::string& path, std::vector<unsigned char> bytes) : path_(path), b_(std::move(bytes)) {}

  template <class T> T at(std::uint64_t offset) const {
    T v;
    if (offset > b_.size() || sizeof(T) > b_.size() - offset) refuse(path_, "it is truncated or malformed");
    std::memcpy(&v, b_.data() + offset, sizeof(T));
    return v;
  }

  std::string string_at(const Elf64Section& table, std::uint32_t index) const {
    if (index >= table.size || table.offset > b_.size() || table.size > b_.size() - table.offset)
      refuse(path_, "a symbol name lies outside its string table");
    const char* begin = reinterpret_cast<const char*>(b_.data() + table.offset + index);
    const std::size_t n = strnlen(begin, table.size - index);
    if (n == table.size - index) refuse(path_, "a symbol name is not terminated");
    return std::string(begin, n);
  }

  void check() const {
    const Elf64Header h = at<Elf64Header>(0);
    if (std::memcmp(h.ident, "\x7f" "ELF", 4) != 0) refuse(path_, "it is not an ELF file");
    if (h.ident[4] != 2) refuse(path_, "it is not a 64-bit ELF object");
    const unsigned char native = [] {
      const std::uint16_t one = 1;
      unsigned char c;
      std::memcpy(&c, &one, 1);
      return c == 1 ? 1 : 2;  // ELFDATA2LSB / ELFDATA2MSB
    }();
    if (h.ident[5] != native) refuse(path_, "its byte order is not this machine's");
    if (h.type != 3) refuse(path_, "it is not a shared object");
    if (h.shentsize != sizeof(Elf64Section) || h.shnum == 0) refuse(path_, "it has no readable section table");
    std::vector<Elf64Section> sections;
    for (std::uint16_t i = 0; i < h.shnum; ++i) sections.push_back(at<Elf64Section>(h.shoff + std::uint64_t(i) * h.shentsize));
    if (h.shstrndx >= sections.size()) refuse(path_, "its section names are missing");
    const Elf64Section& names = sections[h.shstrndx];

    bool has_dynsym = false;
    for (const auto& s : sections) {
      if (s.type != kDynsym) continue;
      has_dynsym = true;
      check_undefined(s, sections);
    }
    if (!has_dynsym) refuse(path_, "it has no dynamic symbol table");
    for (const auto& s : sections) {
      const std::string name = string_at(names, s.name);
      if (s.type == kPreinitArray && s.size > 0) refuse(path_, "it has a .preinit_array");
      if (s.type == kInitArray) check_initialisers(s, sections);
      if ((name == ".ctors" || name.rfind(".ctors.", 0) == 0) && s.size > 16)
        refuse(path_, "it has static constructors (.ctors)");
    }
  }

 private:
  std::string path_;
  std::vector<unsigned char> b_;

  void check_undefined(const Elf64Section& dynsym, const std::vector<Elf64Section>& sections) const {
    if (dynsym.link >= sections.size() || dynsym.entsize != sizeof(Elf64Symbol)) refuse(path_, "its dynamic symbol table is malformed");
    const Elf64Section& strings = sections[dynsym.link];
    for (std::uint64_t k = 1; k < dynsym.size / sizeof(Elf64Symbol); ++k) {  // entry 0 is the null symbol
      const Elf64Symbol sym = at<Elf64Symbol>(dynsym.offset + k * sizeof(Elf64Symbol));
      if (sym.shndx != 0) continue;  // defined here
      const std::string name = string_at(strings, sym.name);
      if (name.empty() || allowed_undefined(name)) continue;
      throw CompileError("[cpu] the compiled kernel references '" + name +
                         "', which is not part of the kernel runtime (libm, memcpy/memset/memmove and the "
                         "toolchain's own symbols): refused before loading. An MSL kernel calls only its own "
                         "functions and the Metal standard library.");
    }
  }

  // Each .init_array entry (an address) must be crtbegin's; its name comes from .symtab.
  void check_initialisers(const Elf64Section& init, const std::vector<Elf64Section>& sections) const {
    const std::uint64_t count = init.size / 8;
    const Elf64Section* symtab = nullptr;
    for (const auto& s : sections)
      if (s.type == kSymtab) symtab = &s;
    for (std::uint64_t k = 0; k < count; ++k) {
      const std::uint64_t target = at<std::uint64_t>(init.offset + k * 8);
      std::string name;
      if (symtab && symtab->link < sections.size() && symtab->entsize == sizeof(Elf64Symbol)) {
        for (std::uint64_t j = 1; j < symtab->size / sizeof(Elf64Symbol) && name.empty(); ++j) {
          const Elf64Symbol sym = at<Elf64Symbol>(symtab->offset + j * sizeof(Elf64Symbol));
          if ((sym.info & 0xf) == 2 /* STT_FUNC */ && sym.value == target && sym.shndx != 0)
            name = string_at(sections[symtab->link], sym.name);
        }
      }
      if (toolchain_initialiser(name)) continue;
      if (name.empty() && count == 1) continue;  // stripped: one entry is the toolchain's
      throw CompileError("[cpu] the compiled kernel has a static initialiser" +
                         (name.empty() ? std::string() : " '" + name + "'") +
                         " (code that would run when it is loaded): refused before loading. MSL program-scope "
                         "data is constant and initialised by constant expressions.");
    }
  }
};

std::vector<unsigned char> read_regular_file(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) refuse(path, std::string("it cannot be opened (") + std::strerror(errno) + ")");
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
      static_cast<std::uint64_t>(st.st_size) > kMaxObjectSize) {
    close(fd);
    refuse(path, "it is not a regular file of a kernel object's size");
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
  if (done != bytes.size()) refuse(path, "it could not be read whole");
  return bytes;
}

}  // namespace

void check_kernel_object(const std::string& path) { ElfReader(path, read_regular_file(path)).check(); }

#endif

}  // namespace metalcall::cpu
