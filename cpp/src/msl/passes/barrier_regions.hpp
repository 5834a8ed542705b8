// Work-item loops for the CPU target: a kernel whose only synchronisation is
// `threadgroup_barrier` at its body's top level, or directly in the bodies of loops whose
// headers are the same for every thread of the group, runs without fibers. MSL requires
// every thread of a group to reach each barrier, so such a body is a sequence of regions
// between barriers, each a loop over the group's threads:
//
//     threadgroup float s[256];            threadgroup float s[256];
//     s[tid] = x[gid];                     for each thread { s[tid] = x[gid]; }
//     threadgroup_barrier(...);      ->    for (uint k = w / 2; k > 0; k >>= 1) {
//     for (uint k = w / 2; k > 0; k >>= 1) {   for each thread { if (tid < k) s[tid] += s[tid + k]; }
//       if (tid < k) s[tid] += s[tid + k];   }
//       threadgroup_barrier(...);          for each thread { if (tid == 0) out[g] = s[0]; }
//     }
//     if (tid == 0) out[g] = s[0];
//
// The group's loops, threadgroup storage and locals whose initialisers are uniform (literals,
// `constant` parameters, group-uniform builtins, other such locals) run once per group;
// a thread's local that a later region reads lives in an array indexed by the thread's index
// in the group (metal_regions.h); a per-thread builtin is recomputed in each region. `return`
// is allowed only in the last region, where it ends that thread's iteration. Everything the
// pass cannot prove (a barrier in a branch or a helper, SIMD-group functions, break or
// continue of a group loop, addresses of locals, lambdas, a statement it cannot classify)
// keeps the fibers: docs/design.md, "Barriers as work-item loops".
#pragma once

#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"
#include "msl/parse/signature_parser.hpp"

namespace metalcall::msl {

class Target;

/** The identifier that starts a kernel body written as regions (a macro of metal_regions.h). */
constexpr const char* kRegionGroupMarker = "__metalcall_region_group";

/**
 * The tokens with the body of every kernel in the subset written as regions (CPU target).
 * A local array read by a later region keeps the fibers. Any failure to follow the source keeps it as written.
 */
std::vector<Token> form_barrier_regions(const std::vector<Token>& t, const std::string& source, const Target& target);

/** True when kernel `k`'s body was written as regions by form_barrier_regions. */
bool runs_in_regions(const std::vector<Token>& t, const ParsedKernel& k);

}  // namespace metalcall::msl
