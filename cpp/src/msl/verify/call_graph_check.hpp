// The call-graph half of the translation verifier: from each kernel's entry point,
// through every call Clang resolved (and, for calls it could not resolve in templates,
// every function of that name), recursion is refused, and a kernel the translator runs
// as a plain loop or as barrier regions must not reach a barrier, a SIMD- or quad-group
// function or a simdgroup matrix.
#pragma once

#include <string>
#include <vector>

#include "msl/verify/translation_facts.hpp"

namespace metalcall::msl::verify {

/** The problems of the graph in `facts`, each naming the kernel and the path. */
std::vector<std::string> check_call_graph(const TranslationFacts& facts);

}  // namespace metalcall::msl::verify
