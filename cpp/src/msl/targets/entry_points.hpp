// The part of each kernel's entry point that every target shares: the layout
// table, the statements that read the arguments from the launch struct, the
// builtins and the call. The Target wraps them in its own exported function.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"
#include "msl/parse/signature_parser.hpp"
#include "msl/targets/target.hpp"

namespace metalcall::msl {

/**
 * Writes kernel number `index`'s parameter block (CUDA only), its layout table
 * (sizeof, alignof and binding of each parameter, and on CUDA the fields' offsets,
 * read back by the runtime) and its entry point, through `target`. `straight_line_source`:
 * the kernel can reach no loop and no threadgroup storage, in a small source (the translator's
 * part of the proof that threads may run several in a row: coarsenable()). `poison_threadgroup`:
 * each threadgroup starts with its [[threadgroup(i)]] memory filled with 0xFF bytes
 * (Target::threadgroup_poison, metal_poison.h).
 */
void emit_entry_point(std::ostream& o, const std::vector<Token>& t, const ParsedKernel& k, std::size_t index,
                      const std::string& qualified_name, bool uses_fibers, bool checked, const Target& target,
                      bool straight_line_source = false, bool regions = false, bool poison_threadgroup = false);

/**
 * Component `d` of builtin `b` as C++ over the names every entry point declares (mtl_lx … the
 * thread in its group, mtl_x0 … the group's origin, mtl_ax … its size, mtl_gx … its position,
 * mtl_L the launch); the CPU's regions declare the same names (msl/passes/barrier_regions.hpp).
 */
std::string builtin_component(Builtin b, int d, const Target& target);

/**
 * True when kernel `k`'s threads may run several in a row, in order, on one thread of the
 * target (CUDA's coarsened launch) with the same results as one thread each: nothing a thread
 * could observe of its threadgroup or of other threads — no barriers or SIMD-group functions
 * (`uses_fibers`), no texture, sampler or threadgroup-memory parameter, no builtin but a scalar
 * thread_position_in_grid (which it must have) — and straight-line code (no loop it can reach,
 * so no thread can wait for another; no threadgroup storage). Never in checked mode.
 */
bool coarsenable(const ParsedKernel& k, bool uses_fibers, bool checked, bool straight_line_source);

}  // namespace metalcall::msl
