// What the kernel object check's readers share (see object_check.hpp): the allowlist of
// imported symbols, the refusals in one voice, and one reader per object format
// (object_check_elf.cpp, object_check_macho.cpp), chosen by the file's magic.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace metalcall::cpu::object_check {

constexpr std::size_t kMaxObjectSize = 256u << 20;  // kernels are kilobytes; more is not ours

enum class Format { elf, macho };

// A symbol a kernel object may import, by its C name (Mach-O's leading underscore
// removed): libm, the memory builtins, stack protection, and the format's own
// toolchain symbols (object_check.cpp keeps the lists).
bool allowed_import(const std::string& c_name, Format format);

// A file that cannot be read as a kernel object: a DeviceError, like a failed dlopen.
[[noreturn]] void refuse_unreadable(const std::string& path, const std::string& why);
// What the checks refuse in a readable object: a CompileError naming the symbol.
[[noreturn]] void refuse_import(const std::string& c_name);
// `what` and `when`: "a static finaliser", "unloaded" for code run by dlclose.
[[noreturn]] void refuse_initialiser(const std::string& name, const std::string& what = "a static initialiser",
                                     const std::string& when = "loaded");

// The readers: each throws one of the refusals above, or returns when the object passes.
void check_elf(const std::string& path, const std::vector<unsigned char>& bytes);
void check_macho(const std::string& path, const std::vector<unsigned char>& bytes);

}  // namespace metalcall::cpu::object_check
