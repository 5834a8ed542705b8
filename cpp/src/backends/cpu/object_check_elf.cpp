// The kernel object check's ELF reader (see object_check_formats.hpp): Elf64 headers,
// section headers, the dynamic symbol table, .init_array and .fini_array, read here so that
// the check needs no libelf. Every offset read from the file is bounds-checked. A kernel
// object runs no code of its own when it is loaded or unloaded: the only entries allowed are
// the toolchain's (crtbegin's), no function may sit in the .init or .fini sections, and there
// is no indirect function (ifunc), whose resolver the loader calls while it relocates.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/object_check_formats.hpp"

namespace metalcall::cpu::object_check {
namespace {

// crtbegin's entries: frame_dummy (GCC's crtbegin), __do_init (compiler-rt's); at unload
// __do_global_dtors_aux (GCC's) and __do_fini (compiler-rt's), which only run __cxa_finalize
// for atexit handlers a kernel cannot register (__cxa_atexit is no allowed import).
bool toolchain_initialiser(const std::string& name) { return name == "frame_dummy" || name == "__do_init"; }
bool toolchain_finaliser(const std::string& name) { return name == "__do_global_dtors_aux" || name == "__do_fini"; }

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

struct Elf64Rela {
  std::uint64_t offset, info;
  std::int64_t addend;
};

constexpr std::uint32_t kSymtab = 2, kRela = 4, kRel = 9, kDynsym = 11, kInitArray = 14, kFiniArray = 15,
                        kPreinitArray = 16;
constexpr unsigned char kIfuncSymbol = 10;  // STT_GNU_IFUNC
constexpr std::uint16_t kX86_64 = 62, kAarch64 = 183;

// R_X86_64_IRELATIVE, R_AARCH64_IRELATIVE: the loader calls the resolver at the addend.
bool irelative(std::uint16_t machine, std::uint32_t type) {
  return (machine == kX86_64 && type == 37) || (machine == kAarch64 && type == 1032);
}

class ElfReader {
 public:
  ElfReader(const std::string& path, const std::vector<unsigned char>& bytes) : path_(path), b_(bytes) {}

  template <class T> T at(std::uint64_t offset) const {
    T v;
    if (offset > b_.size() || sizeof(T) > b_.size() - offset)
      refuse_unreadable(path_, "it is truncated or malformed");
    std::memcpy(&v, b_.data() + offset, sizeof(T));
    return v;
  }

  std::string string_at(const Elf64Section& table, std::uint32_t index) const {
    if (index >= table.size || table.offset > b_.size() || table.size > b_.size() - table.offset)
      refuse_unreadable(path_, "a symbol name lies outside its string table");
    const char* begin = reinterpret_cast<const char*>(b_.data() + table.offset + index);
    const std::size_t n = strnlen(begin, table.size - index);
    if (n == table.size - index) refuse_unreadable(path_, "a symbol name is not terminated");
    return std::string(begin, n);
  }

  void check() const {
    const Elf64Header h = at<Elf64Header>(0);
    if (std::memcmp(h.ident, "\x7f" "ELF", 4) != 0) refuse_unreadable(path_, "it is not an ELF file");
    if (h.ident[4] != 2) refuse_unreadable(path_, "it is not a 64-bit ELF object");
    const unsigned char native = [] {
      const std::uint16_t one = 1;
      unsigned char c;
      std::memcpy(&c, &one, 1);
      return c == 1 ? 1 : 2;  // ELFDATA2LSB / ELFDATA2MSB
    }();
    if (h.ident[5] != native) refuse_unreadable(path_, "its byte order is not this machine's");
    if (h.type != 3) refuse_unreadable(path_, "it is not a shared object");
    if (h.shentsize != sizeof(Elf64Section) || h.shnum == 0)
      refuse_unreadable(path_, "it has no readable section table");
    std::vector<Elf64Section> sections;
    for (std::uint16_t i = 0; i < h.shnum; ++i)
      sections.push_back(at<Elf64Section>(h.shoff + std::uint64_t(i) * h.shentsize));
    if (h.shstrndx >= sections.size()) refuse_unreadable(path_, "its section names are missing");
    const Elf64Section& names = sections[h.shstrndx];

    bool has_dynsym = false;
    for (const auto& s : sections) {
      if (s.type != kDynsym) continue;
      has_dynsym = true;
      check_undefined(s, sections);
    }
    if (!has_dynsym) refuse_unreadable(path_, "it has no dynamic symbol table");
    for (const auto& s : sections) {
      const std::string name = string_at(names, s.name);
      if (s.type == kPreinitArray && s.size > 0) refuse_unreadable(path_, "it has a .preinit_array");
      if (s.type == kInitArray) check_entries(s, sections, false);
      if (s.type == kFiniArray) check_entries(s, sections, true);
      if ((name == ".ctors" || name.rfind(".ctors.", 0) == 0) && s.size > 16)
        refuse_unreadable(path_, "it has static constructors (.ctors)");
      if ((name == ".dtors" || name.rfind(".dtors.", 0) == 0) && s.size > 16)
        refuse_unreadable(path_, "it has static destructors (.dtors)");
      if (name == ".init" || name == ".fini") check_prologue_section(s, name, sections);
      if (s.type == kSymtab || s.type == kDynsym) check_no_ifunc(s, sections);
      if (s.type == kRela || s.type == kRel) check_no_irelative(s, h.machine);
    }
  }

 private:
  std::string path_;
  const std::vector<unsigned char>& b_;

  void check_undefined(const Elf64Section& dynsym, const std::vector<Elf64Section>& sections) const {
    if (dynsym.link >= sections.size() || dynsym.entsize != sizeof(Elf64Symbol))
      refuse_unreadable(path_, "its dynamic symbol table is malformed");
    const Elf64Section& strings = sections[dynsym.link];
    for (std::uint64_t k = 1; k < dynsym.size / sizeof(Elf64Symbol); ++k) {  // entry 0 is the null symbol
      const Elf64Symbol sym = at<Elf64Symbol>(dynsym.offset + k * sizeof(Elf64Symbol));
      if (sym.shndx != 0) continue;  // defined here
      const std::string name = string_at(strings, sym.name);
      if (name.empty() || allowed_import(name, Format::elf)) continue;
      refuse_import(name);
    }
  }

  // An ifunc's resolver runs when the loader binds the symbol (at load with RTLD_NOW):
  // code of the kernel's at load time, as a static initialiser is.
  void check_no_ifunc(const Elf64Section& table, const std::vector<Elf64Section>& sections) const {
    if (table.link >= sections.size() || table.entsize != sizeof(Elf64Symbol))
      refuse_unreadable(path_, "its symbol table is malformed");
    for (std::uint64_t k = 1; k < table.size / sizeof(Elf64Symbol); ++k) {
      const Elf64Symbol sym = at<Elf64Symbol>(table.offset + k * sizeof(Elf64Symbol));
      if ((sym.info & 0xf) == kIfuncSymbol)
        refuse_initialiser(string_at(sections[table.link], sym.name), "an indirect function (ifunc)", "loaded");
    }
  }

  // A local ifunc leaves no symbol in a stripped object, only its IRELATIVE relocation.
  void check_no_irelative(const Elf64Section& table, std::uint16_t machine) const {
    const std::uint64_t entry = table.type == kRela ? sizeof(Elf64Rela) : 16;
    if (table.entsize != entry) refuse_unreadable(path_, "its relocation table is malformed");
    for (std::uint64_t k = 0; k < table.size / entry; ++k) {
      const std::uint64_t info = at<std::uint64_t>(table.offset + k * entry + 8);
      if (irelative(machine, static_cast<std::uint32_t>(info & 0xffffffffu)))
        refuse_initialiser("", "an indirect function (an IRELATIVE relocation)", "loaded");
    }
  }

  // The name of the function at `address`, from .symtab; empty when stripped or not found.
  std::string function_at(std::uint64_t address, const std::vector<Elf64Section>& sections) const {
    const Elf64Section* symtab = nullptr;
    for (const auto& s : sections)
      if (s.type == kSymtab) symtab = &s;
    if (!symtab || symtab->link >= sections.size() || symtab->entsize != sizeof(Elf64Symbol)) return {};
    for (std::uint64_t j = 1; j < symtab->size / sizeof(Elf64Symbol); ++j) {
      const Elf64Symbol sym = at<Elf64Symbol>(symtab->offset + j * sizeof(Elf64Symbol));
      if ((sym.info & 0xf) == 2 /* STT_FUNC */ && sym.value == address && sym.shndx != 0)
        return string_at(sections[symtab->link], sym.name);
    }
    return {};
  }

  // Each .init_array (or .fini_array) entry, an address, must be crtbegin's.
  void check_entries(const Elf64Section& table, const std::vector<Elf64Section>& sections, bool fini) const {
    const std::uint64_t count = table.size / 8;
    for (std::uint64_t k = 0; k < count; ++k) {
      const std::string name = function_at(at<std::uint64_t>(table.offset + k * 8), sections);
      if (fini ? toolchain_finaliser(name) : toolchain_initialiser(name)) continue;
      if (name.empty() && count == 1) continue;  // stripped: one entry is the toolchain's
      if (fini) refuse_initialiser(name, "a static finaliser (.fini_array)", "unloaded");
      refuse_initialiser(name);
    }
  }

  // .init and .fini hold crti's and crtn's prologue and epilogue, which run at load and unload:
  // a function placed there (a section attribute) would run then. Only _init and _fini may
  // start inside them.
  void check_prologue_section(const Elf64Section& section, const std::string& name,
                              const std::vector<Elf64Section>& sections) const {
    const Elf64Section* symtab = nullptr;
    for (const auto& s : sections)
      if (s.type == kSymtab) symtab = &s;
    if (!symtab || symtab->link >= sections.size() || symtab->entsize != sizeof(Elf64Symbol)) return;
    for (std::uint64_t j = 1; j < symtab->size / sizeof(Elf64Symbol); ++j) {
      const Elf64Symbol sym = at<Elf64Symbol>(symtab->offset + j * sizeof(Elf64Symbol));
      if ((sym.info & 0xf) != 2 /* STT_FUNC */ || sym.shndx == 0) continue;
      if (sym.value < section.addr || sym.value >= section.addr + section.size) continue;
      const std::string function = string_at(sections[symtab->link], sym.name);
      if (function == "_init" || function == "_fini") continue;
      if (name == ".init") refuse_initialiser(function, "a function in the .init section");
      refuse_initialiser(function, "a function in the .fini section", "unloaded");
    }
  }
};

}  // namespace

void check_elf(const std::string& path, const std::vector<unsigned char>& bytes) { ElfReader(path, bytes).check(); }

}  // namespace metalcall::cpu::object_check
