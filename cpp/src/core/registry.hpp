// Backends built into this binary register here; CMake generates the list.
#pragma once

namespace metalcall {

/** Calls register_<name>_backend() for every backend compiled in (generated file). */
void register_builtin_backends();

void register_cpu_backend();
void register_metal_backend();
void register_cuda_backend();

}  // namespace metalcall
