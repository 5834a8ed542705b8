// `coherent device T*` / `coherent device S&` (SPIRV-Cross's spelling of coherent buffers,
// without MSL 3.2's `(device)`): left out of the translation, as `coherent(device)` is
// (translator.cpp): the CPU has one memory for all threads. On CUDA, as for `coherent(device)`,
// a kernel that relies on coherence across threadgroups uses atomics or fences to order it.
#pragma once

#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/** Removes each `coherent` that qualifies an address space (`coherent device`, `coherent threadgroup`). */
void drop_coherent_qualifiers(std::vector<Token>& t);

}  // namespace metalcall::msl
