// Loading a compiled kernel object: the one place the CPU backend hands code to
// dlopen. It loads the exact bytes it was given (already checked by the disk cache,
// or just built), from a private copy, never from a path someone else could change.
#pragma once

#include <string>

namespace metalcall::cpu {

/**
 * dlopen()s the shared object `bytes` (RTLD_NOW | RTLD_LOCAL) and returns its handle;
 * throws DeviceError when it cannot. The handle is dlclose()d by its CpuModule.
 */
void* load_kernel_object(const std::string& bytes);

}  // namespace metalcall::cpu
