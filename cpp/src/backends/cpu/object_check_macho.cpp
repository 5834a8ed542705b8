// The kernel object check's Mach-O reader (see object_check_formats.hpp): a 64-bit
// little-endian Mach-O, what Apple's clang builds for arm64 and x86_64 Macs. The structs
// are written here from Apple's published layouts (<mach-o/loader.h>, <mach-o/nlist.h>,
// <mach-o/fixup-chains.h>); every offset read from the file is bounds-checked.
#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "backends/cpu/object_check_formats.hpp"
#include "metalcall/errors.hpp"

namespace metalcall::cpu::object_check {
namespace {

struct MachHeader64 {
  std::uint32_t magic;
  std::int32_t cputype, cpusubtype;
  std::uint32_t filetype, ncmds, sizeofcmds, flags, reserved;
};
struct LoadCommand {
  std::uint32_t cmd, cmdsize;
};
struct SegmentCommand64 {
  std::uint32_t cmd, cmdsize;
  char segname[16];
  std::uint64_t vmaddr, vmsize, fileoff, filesize;
  std::int32_t maxprot, initprot;
  std::uint32_t nsects, flags;
};
struct Section64 {
  char sectname[16], segname[16];
  std::uint64_t addr, size;
  std::uint32_t offset, align, reloff, nreloc, flags, reserved1, reserved2, reserved3;
};
struct SymtabCommand {
  std::uint32_t cmd, cmdsize, symoff, nsyms, stroff, strsize;
};
struct Nlist64 {
  std::uint32_t strx;
  std::uint8_t type, sect;
  std::uint16_t desc;
  std::uint64_t value;
};
struct DylibCommand {
  std::uint32_t cmd, cmdsize, name_offset, timestamp, current_version, compatibility_version;
};
struct DyldInfoCommand {
  std::uint32_t cmd, cmdsize, rebase_off, rebase_size, bind_off, bind_size, weak_bind_off, weak_bind_size,
      lazy_bind_off, lazy_bind_size, export_off, export_size;
};
struct LinkeditDataCommand {
  std::uint32_t cmd, cmdsize, dataoff, datasize;
};
struct ChainedFixupsHeader {
  std::uint32_t version, starts_offset, imports_offset, symbols_offset, imports_count, imports_format, symbols_format;
};
struct RelocationInfo {
  std::int32_t address;
  std::uint32_t info;  // symbolnum:24, pcrel:1, length:2, extern:1, type:4
};
static_assert(sizeof(MachHeader64) == 32 && sizeof(SegmentCommand64) == 72 && sizeof(Section64) == 80 &&
                  sizeof(SymtabCommand) == 24 && sizeof(Nlist64) == 16 && sizeof(DylibCommand) == 24 &&
                  sizeof(DyldInfoCommand) == 48 && sizeof(LinkeditDataCommand) == 16 &&
                  sizeof(ChainedFixupsHeader) == 28 && sizeof(RelocationInfo) == 8,
              "Mach-O structures have their published sizes");

constexpr std::uint32_t kMagic64 = 0xfeedfacf;
constexpr std::int32_t kCpuX86_64 = 0x01000007, kCpuArm64 = 0x0100000c;
constexpr std::uint32_t kObject = 1, kDylib = 6, kBundle = 8;  // file types
// Load commands (LC_*); kReqDyld marks those dyld must understand.
constexpr std::uint32_t kReqDyld = 0x80000000;
constexpr std::uint32_t kLcSymtab = 0x2, kLcLoadDylib = 0xc, kLcSegment64 = 0x19, kLcRoutines64 = 0x1a,
                        kLcLazyLoadDylib = 0x20, kLcLoadWeakDylib = 0x18 | kReqDyld,
                        kLcReexportDylib = 0x1f | kReqDyld, kLcLoadUpwardDylib = 0x23 | kReqDyld,
                        kLcDyldInfo = 0x22, kLcDyldInfoOnly = 0x22 | kReqDyld, kLcDyldChainedFixups = 0x34 | kReqDyld,
                        kLcDyldExportsTrie = 0x33 | kReqDyld;
// Section types (the low byte of a section's flags) whose entries dyld runs.
constexpr std::uint32_t kModInitFuncPointers = 0x9, kModTermFuncPointers = 0xa, kThreadLocalInitFunctions = 0x15,
                        kInitFuncOffsets = 0x16;
// Interposing tuples: dyld would redirect other images' calls of a function to the kernel's.
constexpr std::uint32_t kInterposing = 0xd;
// nlist n_type bits, and n_desc's mark of a symbol resolver (`.symbol_resolver`).
constexpr std::uint8_t kStab = 0xe0, kTypeMask = 0x0e, kExt = 0x01;
constexpr std::uint16_t kSymbolResolver = 0x100;
// Export trie flags: the kind (regular, thread-local, absolute), a re-export of another
// library's symbol, a stub whose resolver dyld calls when it binds the symbol.
constexpr std::uint64_t kExportKindMask = 0x3, kExportAbsolute = 0x2, kExportReexport = 0x8, kExportResolver = 0x10;
constexpr std::uint8_t kUndf = 0x0, kIndr = 0xa, kPbud = 0xc, kSect = 0xe;
// Library ordinals with a special meaning in binds and chained imports.
constexpr int kOrdinalSelf = 0, kOrdinalWeakLookup = -3;

// The dynamic libraries a kernel may link: what Apple's clang++ links for the CPU backend's
// `-shared ... -lm` (libSystem, of which libm is part, and libc++, which the driver adds to
// every C++ link), and the C++ runtime of another compiler METALCALL_CXX may name (LLVM's
// libc++/libunwind, GCC's libstdc++/libgcc_s), by file name: their folder varies by install.
// The symbols imported from any of them are checked all the same.
bool allowed_library(const std::string& name) {
  if (name == "/usr/lib/libSystem.B.dylib" || name == "/usr/lib/libc++abi.dylib") return true;
  const std::string leaf = name.substr(name.find_last_of('/') + 1);
  for (const char* runtime : {"libc++.1.dylib", "libc++abi.1.dylib", "libunwind.1.dylib", "libstdc++.6.dylib",
                              "libgcc_s.1.dylib", "libgcc_s.1.1.dylib"})
    if (leaf == runtime) return true;
  return false;
}

class MachOReader {
 public:
  MachOReader(const std::string& path, const std::vector<unsigned char>& bytes) : path_(path), b_(bytes) {}

  void check() {
    const MachHeader64 h = at<MachHeader64>(0);
    if (h.magic != kMagic64) malformed("it is not a 64-bit little-endian Mach-O file");
    if (h.cputype != kCpuArm64 && h.cputype != kCpuX86_64) malformed("its CPU type is neither arm64 nor x86_64");
    if (h.filetype != kDylib && h.filetype != kBundle && h.filetype != kObject)
      malformed("it is not a Mach-O dynamic library");
    filetype_ = h.filetype;
    if (h.sizeofcmds > b_.size() - sizeof h) malformed("its load commands are truncated");
    read_load_commands(h);
    if (!symtab_) malformed("it has no symbol table");
    read_symbols();
    // What it links and imports, then what would run at load time (an initialiser that
    // calls the host is named by its import, as on ELF).
    for (const auto& library : libraries_) {
      if (!allowed_library(library))
        throw CompileError("[cpu] the compiled kernel links '" + library +
                           "', which is not part of the kernel runtime (libSystem and the C++ runtime): refused "
                           "before loading. Build kernels with Apple's clang (unset METALCALL_CXX).");
    }
    for (const auto& s : symbols_) {
      if (s.type & kStab) continue;  // debugging entries
      const std::uint8_t kind = s.type & kTypeMask;
      // Mach-O's indirect function: dyld calls the resolver when it binds the symbol (dlsym of
      // a kernel's entry point binds it), as the ELF loader calls an ifunc's.
      if (kind == kSect && (s.desc & kSymbolResolver)) refuse_initialiser(c_name(s), "a symbol resolver", "looked up");
      // An undefined external with a value in an object file is a common (tentative) definition.
      const bool common = kind == kUndf && filetype_ == kObject && s.value != 0;
      if ((kind == kUndf && !common) || kind == kPbud) {
        if (s.type & kExt) check_import(string_at(s.strx));
      } else if (kind == kIndr) {
        check_import(string_at(static_cast<std::uint32_t>(s.value)));  // an alias of another image's symbol
      }
    }
    if (dyld_info_) {
      check_bind_stream(dyld_info_->bind_off, dyld_info_->bind_size);
      check_bind_stream(dyld_info_->lazy_bind_off, dyld_info_->lazy_bind_size);
    }
    if (chained_fixups_) check_chained_imports(*chained_fixups_);
    if (dyld_info_) check_exports(dyld_info_->export_off, dyld_info_->export_size);
    if (exports_trie_) check_exports(exports_trie_->dataoff, exports_trie_->datasize);
    if (routines_) refuse_initialiser("", "a library initialisation routine (LC_ROUTINES_64)");
    for (const auto& sec : sections_) check_section(sec);
  }

 private:
  const std::string& path_;
  const std::vector<unsigned char>& b_;
  std::uint32_t filetype_ = 0;
  std::uint64_t image_base_ = 0;  // the __TEXT segment's address: __init_offsets count from it
  bool routines_ = false;
  std::unique_ptr<SymtabCommand> symtab_;
  std::unique_ptr<DyldInfoCommand> dyld_info_;
  std::unique_ptr<LinkeditDataCommand> chained_fixups_;
  std::unique_ptr<LinkeditDataCommand> exports_trie_;
  std::vector<Section64> sections_;
  std::vector<std::string> libraries_;
  std::vector<Nlist64> symbols_;
  std::set<std::string> defined_;  // external symbols this image defines

  [[noreturn]] void malformed(const std::string& why) const { refuse_unreadable(path_, why); }

  bool fits(std::uint64_t offset, std::uint64_t size) const {
    return offset <= b_.size() && size <= b_.size() - offset;
  }

  template <class T> T at(std::uint64_t offset) const {
    if (!fits(offset, sizeof(T))) malformed("it is truncated or malformed");
    T v;
    std::memcpy(&v, b_.data() + offset, sizeof(T));
    return v;
  }

  // A NUL-terminated string inside [begin, end) of the file.
  std::string string_in(std::uint64_t begin, std::uint64_t end, std::uint64_t offset, const char* what) const {
    if (end > b_.size() || offset < begin || offset >= end) malformed(std::string(what) + " lies outside its table");
    const char* s = reinterpret_cast<const char*>(b_.data() + offset);
    const std::size_t n = strnlen(s, end - offset);
    if (n == end - offset) malformed(std::string(what) + " is not terminated");
    return std::string(s, n);
  }

  std::string string_at(std::uint32_t strx) const {
    return string_in(symtab_->stroff, std::uint64_t(symtab_->stroff) + symtab_->strsize,
                     std::uint64_t(symtab_->stroff) + strx, "a symbol name");
  }

  void read_load_commands(const MachHeader64& h) {
    const std::uint64_t end = sizeof h + std::uint64_t(h.sizeofcmds);
    std::uint64_t offset = sizeof h;
    for (std::uint32_t i = 0; i < h.ncmds; ++i) {
      const LoadCommand lc = at<LoadCommand>(offset);
      if (lc.cmdsize < sizeof lc || lc.cmdsize > end - offset) malformed("a load command is truncated or malformed");
      switch (lc.cmd) {
        case kLcSymtab:
          if (symtab_ || lc.cmdsize < sizeof(SymtabCommand)) malformed("its symbol table command is malformed");
          symtab_ = std::make_unique<SymtabCommand>(at<SymtabCommand>(offset));
          break;
        case kLcSegment64: read_segment(offset, lc.cmdsize); break;
        case kLcLoadDylib:
        case kLcLoadWeakDylib:
        case kLcReexportDylib:
        case kLcLazyLoadDylib:
        case kLcLoadUpwardDylib: {
          if (lc.cmdsize < sizeof(DylibCommand)) malformed("a library command is malformed");
          const DylibCommand d = at<DylibCommand>(offset);
          libraries_.push_back(string_in(offset, offset + lc.cmdsize, offset + d.name_offset, "a library name"));
          break;
        }
        case kLcDyldInfo:
        case kLcDyldInfoOnly:
          if (dyld_info_ || lc.cmdsize < sizeof(DyldInfoCommand)) malformed("its dyld information is malformed");
          dyld_info_ = std::make_unique<DyldInfoCommand>(at<DyldInfoCommand>(offset));
          break;
        case kLcDyldChainedFixups:
          if (chained_fixups_ || lc.cmdsize < sizeof(LinkeditDataCommand))
            malformed("its chained fixups are malformed");
          chained_fixups_ = std::make_unique<LinkeditDataCommand>(at<LinkeditDataCommand>(offset));
          break;
        case kLcDyldExportsTrie:
          if (exports_trie_ || lc.cmdsize < sizeof(LinkeditDataCommand)) malformed("its export trie is malformed");
          exports_trie_ = std::make_unique<LinkeditDataCommand>(at<LinkeditDataCommand>(offset));
          break;
        case kLcRoutines64: routines_ = true; break;
        default: break;  // the rest (UUID, build version, code signature, ...) cannot run or bind code
      }
      offset += lc.cmdsize;
    }
  }

  void read_segment(std::uint64_t offset, std::uint32_t cmdsize) {
    const SegmentCommand64 seg = at<SegmentCommand64>(offset);
    if (cmdsize < sizeof seg || seg.nsects > (cmdsize - sizeof seg) / sizeof(Section64))
      malformed("a segment's sections are truncated");
    if (std::strncmp(seg.segname, "__TEXT", 16) == 0) image_base_ = seg.vmaddr;
    for (std::uint32_t k = 0; k < seg.nsects; ++k)
      sections_.push_back(at<Section64>(offset + sizeof seg + std::uint64_t(k) * sizeof(Section64)));
  }

  void read_symbols() {
    const SymtabCommand& t = *symtab_;
    if (!fits(t.stroff, t.strsize)) malformed("its string table is truncated");
    if (!fits(t.symoff, std::uint64_t(t.nsyms) * sizeof(Nlist64))) malformed("its symbol table is truncated");
    for (std::uint32_t k = 0; k < t.nsyms; ++k)
      symbols_.push_back(at<Nlist64>(t.symoff + std::uint64_t(k) * sizeof(Nlist64)));
    for (const auto& s : symbols_)
      if (!(s.type & kStab) && (s.type & kTypeMask) == kSect && (s.type & kExt)) defined_.insert(string_at(s.strx));
  }

  // Mach-O C symbols carry a leading underscore; the allowlist holds C names.
  void check_import(const std::string& name) const {
    if (name.empty()) return;
    if (name[0] != '_') {
      if (name == "dyld_stub_binder") return;  // lazy binding's helper (images without chained fixups)
      refuse_import(name);
    }
    if (!allowed_import(name.substr(1), Format::macho)) refuse_import(name.substr(1));
  }

  // A bind names an import unless it binds this image's own definition (self or weak coalescing).
  void check_bind(const std::string& name, int ordinal) const {
    if ((ordinal == kOrdinalSelf || ordinal == kOrdinalWeakLookup) && defined_.count(name)) return;
    check_import(name);
  }

  std::uint64_t uleb(std::uint64_t& p, std::uint64_t end) const {
    std::uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      if (p >= end || shift > 63) malformed("its bind information is malformed");
      const unsigned char byte = b_[p++];
      v |= std::uint64_t(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return v;
    }
  }

  // The bind opcodes of LC_DYLD_INFO (bind and lazy-bind streams): every symbol dyld binds by
  // name. The weak-bind stream is not read: it names this image's weak definitions, which dyld
  // coalesces with other images' weak definitions, never with a library's plain functions.
  void check_bind_stream(std::uint32_t off, std::uint32_t size) const {
    if (!fits(off, size)) malformed("its bind information is truncated");
    std::uint64_t p = off;
    const std::uint64_t end = std::uint64_t(off) + size;
    int ordinal = 0;
    while (p < end) {
      const unsigned char byte = b_[p++];
      const unsigned op = byte & 0xf0, imm = byte & 0x0f;
      switch (op) {
        case 0x00: break;                                               // DONE (lazy streams continue)
        case 0x10: ordinal = int(imm); break;                           // SET_DYLIB_ORDINAL_IMM
        case 0x20: ordinal = int(uleb(p, end)); break;                  // SET_DYLIB_ORDINAL_ULEB
        case 0x30: ordinal = imm ? int(0xfffffff0u | imm) : 0; break;   // SET_DYLIB_SPECIAL_IMM (negative)
        case 0x40: {                                                    // SET_SYMBOL_TRAILING_FLAGS_IMM
          const std::string name = string_in(off, end, p, "a bound symbol's name");
          p += name.size() + 1;
          check_bind(name, ordinal);
          break;
        }
        case 0x50: break;                                               // SET_TYPE_IMM
        case 0x60: uleb(p, end); break;                                 // SET_ADDEND_SLEB (same length)
        case 0x70: uleb(p, end); break;                                 // SET_SEGMENT_AND_OFFSET_ULEB
        case 0x80: uleb(p, end); break;                                 // ADD_ADDR_ULEB
        case 0x90: break;                                               // DO_BIND
        case 0xa0: uleb(p, end); break;                                 // DO_BIND_ADD_ADDR_ULEB
        case 0xb0: break;                                               // DO_BIND_ADD_ADDR_IMM_SCALED
        case 0xc0: uleb(p, end); uleb(p, end); break;                   // DO_BIND_ULEB_TIMES_SKIPPING_ULEB
        case 0xd0: if (imm == 0) uleb(p, end); break;                   // THREADED (table size / apply)
        default: malformed("its bind information has an unknown opcode");
      }
    }
  }

  // LC_DYLD_CHAINED_FIXUPS: the imports table names every symbol dyld binds.
  void check_chained_imports(const LinkeditDataCommand& c) const {
    if (!fits(c.dataoff, c.datasize) || c.datasize < sizeof(ChainedFixupsHeader))
      malformed("its chained fixups are truncated");
    const ChainedFixupsHeader h = at<ChainedFixupsHeader>(c.dataoff);
    if (h.symbols_format != 0) malformed("its chained fixups' symbol names are compressed");
    // DYLD_CHAINED_IMPORT, _ADDEND, _ADDEND64: 4, 8 and 16 bytes.
    const std::uint32_t format = h.imports_format;
    const std::uint64_t entry = format == 1 ? 4 : format == 2 ? 8 : format == 3 ? 16 : 0;
    if (entry == 0) malformed("its chained fixups have an unknown import format");
    if (h.imports_offset > c.datasize || std::uint64_t(h.imports_count) * entry > c.datasize - h.imports_offset ||
        h.symbols_offset > c.datasize)
      malformed("its chained fixups' imports are truncated");
    const std::uint64_t base = c.dataoff, names = base + h.symbols_offset, end = base + c.datasize;
    for (std::uint32_t k = 0; k < h.imports_count; ++k) {
      const std::uint64_t at_entry = base + h.imports_offset + k * entry;
      int ordinal;
      std::uint64_t name_offset;
      if (h.imports_format == 3) {
        const std::uint64_t v = at<std::uint64_t>(at_entry);
        ordinal = int(std::int16_t(v & 0xffff));
        name_offset = v >> 32;
      } else {
        const std::uint32_t v = at<std::uint32_t>(at_entry);
        ordinal = int(std::int8_t(v & 0xff));
        name_offset = v >> 9;
      }
      check_bind(string_in(names, end, names + name_offset, "an imported symbol's name"), ordinal);
    }
  }

  // The export trie (LC_DYLD_INFO's, or LC_DYLD_EXPORTS_TRIE's with chained fixups): every
  // symbol the image offers dlsym. A kernel exports its own code and data only: a resolver
  // stub makes dyld call the resolver when it binds the symbol (the dlsym of an entry point),
  // a re-export hands out another library's function under a kernel's name without any import,
  // an absolute symbol an arbitrary address.
  void check_exports(std::uint32_t off, std::uint32_t size) const {
    if (size == 0) return;
    if (!fits(off, size)) malformed("its export trie is truncated");
    const std::uint64_t end = std::uint64_t(off) + size;
    std::vector<std::pair<std::uint64_t, std::string>> pending{{off, ""}};
    std::set<std::uint64_t> seen;
    while (!pending.empty()) {
      auto [p, name] = pending.back();
      pending.pop_back();
      if (!seen.insert(p).second) malformed("its export trie has a cycle");
      const std::uint64_t terminal = uleb(p, end);
      if (terminal > end - p) malformed("its export trie is malformed");
      const std::uint64_t children = p + terminal;
      if (terminal > 0) {
        const std::uint64_t flags = uleb(p, end);
        const std::string c = !name.empty() && name[0] == '_' ? name.substr(1) : name;
        if (flags & kExportResolver) refuse_initialiser(c, "a symbol resolver", "looked up");
        if (flags & kExportReexport) refuse_initialiser(c, "a re-export of another library's function", "looked up");
        if ((flags & kExportKindMask) == kExportAbsolute) refuse_initialiser(c, "an absolute symbol", "looked up");
      }
      p = children;
      if (p >= end) malformed("its export trie is truncated");
      const unsigned count = b_[p++];
      for (unsigned k = 0; k < count; ++k) {
        const std::string edge = string_in(off, end, p, "an export's name");
        p += edge.size() + 1;
        const std::uint64_t child = uleb(p, end);
        if (child >= size) malformed("its export trie points outside itself");
        pending.emplace_back(off + child, name + edge);
      }
    }
  }

  // Sections whose entries dyld runs: any entry is refused (Apple's toolchain adds none of
  // its own to a library). The first entry is named when its target can be found.
  void check_section(const Section64& s) const {
    const std::uint32_t type = s.flags & 0xff;
    const std::string name(s.sectname, strnlen(s.sectname, sizeof s.sectname));
    const bool init = type == kModInitFuncPointers || type == kInitFuncOffsets || type == kThreadLocalInitFunctions ||
                      name == "__mod_init_func" || name == "__init_offsets";
    const bool term = type == kModTermFuncPointers || name == "__mod_term_func";
    if (s.size == 0) return;
    if (type == kInterposing || name == "__interpose")
      refuse_initialiser("", "interposing entries (__interpose: dyld would redirect other images' calls)");
    // Objective-C metadata: the runtime runs a class's or category's +load while dyld loads it.
    if (name.rfind("__objc_", 0) == 0) refuse_initialiser("", "Objective-C metadata (" + name + ")");
    if (!(init || term)) return;
    const std::string target = first_entry_name(s, type);
    if (init) refuse_initialiser(target);
    refuse_initialiser(target, "a static finaliser", "unloaded");
  }

  std::string first_entry_name(const Section64& s, std::uint32_t type) const {
    // An object file: the entry is a relocation, to a symbol or to an address.
    if (filetype_ == kObject && s.nreloc > 0 && fits(s.reloff, sizeof(RelocationInfo))) {
      const RelocationInfo r = at<RelocationInfo>(s.reloff);
      const std::uint32_t index = r.info & 0xffffff;
      if ((r.info >> 27) & 1) return index < symbols_.size() ? c_name(symbols_[index]) : "";
    }
    if (!fits(s.offset, 8)) return "";
    std::uint64_t address;
    if (type == kInitFuncOffsets) {
      address = image_base_ + at<std::uint32_t>(s.offset);
    } else {
      address = at<std::uint64_t>(s.offset);
      // With chained fixups the slot holds a rebase whose low 36 bits are the target's offset.
      if (filetype_ != kObject && chained_fixups_) address = image_base_ + (address & 0xfffffffffull);
    }
    for (const auto& sym : symbols_)
      if (!(sym.type & kStab) && (sym.type & kTypeMask) == kSect && sym.value == address) return c_name(sym);
    return "";
  }

  std::string c_name(const Nlist64& sym) const {
    if (symtab_ == nullptr || sym.strx >= symtab_->strsize) return "";
    const std::string name = string_at(sym.strx);
    return !name.empty() && name[0] == '_' ? name.substr(1) : name;
  }
};

}  // namespace

void check_macho(const std::string& path, const std::vector<unsigned char>& bytes) {
  MachOReader(path, bytes).check();
}

}  // namespace metalcall::cpu::object_check
