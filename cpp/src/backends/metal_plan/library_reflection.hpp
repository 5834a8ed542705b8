// What a Metal library and its pipelines say about their kernels, and how both drivers check it
// against the MSL front end's reflection of the source (P2.1 item 1): plain C++, shared by the
// Objective-C++ backend (which copies Metal's reflection into these values) and the Metal
// simulator (whose "Metal" is a CPU device), so the decisions are tested on any machine.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "metalcall/reflection.hpp"

namespace metalcall::metal {

/** What Metal's pipeline reflection says about one argument, copied out of Objective-C. */
struct BindingInfo {
  enum class Kind { buffer, threadgroup_memory, texture, sampler, other };
  Kind kind = Kind::other;
  int index = -1;
  std::string name;
  bool read_only = false;
  std::size_t data_size = 0;   // bufferDataSize / threadgroupMemoryDataSize
  std::size_t alignment = 0;   // bufferAlignment / threadgroupMemoryAlignment
  ScalarType scalar = ScalarType::unknown;
  int vector_width = 1;
  std::string type_name;       // Metal's name for the data type, for messages
};

/**
 * Checks the kernels the front end found in the preprocessed source (`reflected`) against the
 * kernel functions of the compiled library (`[library functionNames]`, kernels only): each name
 * once in the front end's list, and the same names in both. Anything else is a CompileError
 * that names every kernel only one side has; `scope` ("[metal]") starts it.
 */
void check_kernel_names(const std::vector<std::string>& reflected, const std::vector<std::string>& compiled,
                        const std::string& scope);

/**
 * Fills element_size/element_align of the front end's table from Metal's bindings and
 * checks that both agree on kinds and indices. Throws CompileError on disagreement or
 * on a binding metalcall cannot feed; `scope` starts the message.
 */
void merge_reflection(KernelInfo& kernel, const std::vector<BindingInfo>& bindings,
                      const std::string& scope = "[metal]");

/** The table of a kernel known only from Metal (a loaded .metallib): buffers, then threadgroup memory. */
KernelInfo kernel_info_from_bindings(const std::string& name, const std::vector<BindingInfo>& bindings);

}  // namespace metalcall::metal
