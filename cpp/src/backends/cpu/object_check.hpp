// The second wall, independent of the front end's MSL rules: before the CPU backend
// dlopens a kernel's shared object (freshly built or from the disk cache), its imported
// symbols and initialisers are read (ELF on Linux, Mach-O on macOS), and an object that
// could reach the host (an import outside the allowlist) or run code at load time (a
// static initialiser) is refused.
#pragma once

#include <string>
#include <vector>

namespace metalcall::cpu {

/**
 * Throws CompileError naming the offending symbol when the object at `path` imports a
 * symbol outside the allowlist (libm, memcpy/memset/memmove/memcmp, the toolchain's own
 * symbols: stack protection, TLS, ...) or has initialisers beyond the toolchain's own
 * (ELF: crtbegin's frame_dummy; Mach-O: none), or (Mach-O) links a library other than
 * libSystem and the C++ runtime. The reader is chosen by the file's magic, not by the
 * platform: an ELF64 shared object of this machine's byte order, or a 64-bit
 * little-endian Mach-O (arm64 or x86_64; a dylib or bundle, or an object file, which
 * dlopen then refuses). Anything else (fat, 32-bit, truncated, inconsistent) is a
 * DeviceError. See docs/msl-rules.md.
 */
void check_kernel_object(const std::string& path);
/** The same check of an object already read (`path` names it in messages). */
void check_kernel_object_bytes(const std::string& path, const std::vector<unsigned char>& bytes);

}  // namespace metalcall::cpu
