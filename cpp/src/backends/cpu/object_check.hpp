// The second wall, independent of the front end's MSL rules: before the CPU backend
// dlopens a kernel's shared object (freshly built or from the disk cache), its ELF
// dynamic symbol table and initialiser arrays are read, and an object that could
// reach the host (an undefined symbol outside the allowlist) or run code at load
// time (a static initialiser) is refused.
#pragma once

#include <string>

namespace metalcall::cpu {

/**
 * Throws CompileError naming the offending symbol when the shared object at `path`
 * references a symbol outside the allowlist (libm, memcpy/memset/memmove/memcmp, the
 * toolchain's own weak references, stack-protector and TLS helpers) or has
 * initialisers beyond the toolchain's own (crtbegin's frame_dummy). Also refuses
 * what is not a regular ELF64 file of this machine's byte order. On macOS (Mach-O)
 * it checks nothing: see docs/msl-rules.md.
 */
void check_kernel_object(const std::string& path);

}  // namespace metalcall::cpu
