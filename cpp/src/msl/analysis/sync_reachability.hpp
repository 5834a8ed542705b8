// Which kernels may make their threads wait for each other: those that can reach a
// threadgroup or SIMD-group barrier, a SIMD- or quad-group function or a SIMD-group matrix
// through any path (member functions, functors, operator overloads, constructors,
// templates, lambdas, macros). The CPU backend runs such a kernel's threads as fibers and
// the others as a plain loop; CUDA launches such a kernel as whole threadgroups. A wrong
// "cannot reach" is a silent wrong answer, so the analysis over-approximates by name and
// answers "may reach" wherever it cannot prove otherwise (docs/design.md, "Fibers or a
// plain loop").
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"
#include "msl/parse/signature_parser.hpp"

namespace metalcall::msl {

/**
 * True for a name of the standard library whose use needs the threads of a group (or
 * SIMD-group) to wait for each other: the barriers, every `simd_*` / `quad_*` /
 * `simdgroup_*` name (but the builtin attribute simdgroup_index_in_threadgroup),
 * `thread_elements`, `make_filled_simdgroup_matrix`, Apple's `__metal_simd_*`
 * intrinsics, and the prelude's own runtime (`mtl_rt`).
 */
bool is_synchronising_name(const std::string& id);

/**
 * Per kernel: true unless no path from it can reach a synchronising name. The source is
 * cut into its namespace-scope declarations; a declaration "synchronises" when it
 * mentions a synchronising name or a name that a synchronising declaration declares,
 * and a kernel runs as fibers when its declaration (or its [[host_name]] instantiation)
 * synchronises, or when a synchronising operator (or begin/end/get) is declared at
 * namespace scope, where C++ calls it without naming it.
 */
std::vector<bool> fiber_kernels(const std::vector<Token>& t, const std::vector<ParsedKernel>& kernels);

/**
 * fiber_kernels with another question: per kernel, true unless no path from it can reach a
 * declaration that mentions a name `seed` accepts (`for`: a loop; `threadgroup`: threadgroup
 * storage). The same over-approximation by name, and the same argument for its safety.
 */
std::vector<bool> kernels_reaching(const std::vector<Token>& t, const std::vector<ParsedKernel>& kernels,
                                   const std::function<bool(const std::string&)>& seed);

}  // namespace metalcall::msl
