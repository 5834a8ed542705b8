// Which kernels the CUDA translation may give a coarsened entry point (several consecutive
// positions run in order by one CUDA thread: targets/entry_points.hpp, coarsenable), as far as
// the source decides it: the kernel's parameters decide the rest.
#pragma once

#include <vector>

#include "msl/lex/lexer.hpp"
#include "msl/parse/signature_parser.hpp"

namespace metalcall::msl {

/**
 * Per kernel: true when no path from it can reach a loop (no thread can wait for another; none
 * at all where `loop_free`, the translator's reading of the whole source),
 * threadgroup storage, or precise sin, cos or tan (CUDA's long argument reduction, which ran
 * slower four times in a thread than once: docs/design.md, "Straight-line kernels"), in a
 * source of at most 1500 tokens (the coarsened entry point inlines the kernel five times).
 * Reachability is kernels_reaching's over-approximation by name (analysis/sync_reachability.hpp).
 */
std::vector<bool> straight_line_kernels(const std::vector<Token>& t, const std::vector<ParsedKernel>& kernels,
                                        bool loop_free);

}  // namespace metalcall::msl
