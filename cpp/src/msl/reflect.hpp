// Reflection from MSL source: the kernels of a source and their parameter tables,
// parsed by our own front end (no compiler needed). Sizes (element_size/align) are
// left 0 here; each backend fills them from its compiler (sizeof in the generated
// code on CPU/CUDA, MTLComputePipelineReflection on Metal).
#pragma once

#include <string>
#include <vector>

#include "metalcall/reflection.hpp"

namespace metalcall::msl {

/** Every `kernel` function of `source`, in source order. Throws CompileError. */
std::vector<KernelInfo> reflect_kernels(const std::string& source);

}  // namespace metalcall::msl
