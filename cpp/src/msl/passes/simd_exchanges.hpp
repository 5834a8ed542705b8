// SIMD-group functions as region boundaries (barrier_regions.cpp): the calls a statement at a
// region's top level may hold. `float s = simd_sum(x[gid]);` there ends the region before it,
// whose threads each put their x[gid] in the call's storage; the group exchanges the values of
// each SIMD-group's lanes (every lane is active: nothing returns before a later region), and
// the call's region reads its thread's result (metal_regions.h: mtl_put, mtl_take). Calls whose
// other argument (a lane, delta or mask) differs between threads, or that a conditional, `&&`
// or `||` may skip, are not followed: such kernels keep the fibers.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl::regions {

struct ExchangeCall {
  std::size_t first = 0, name = 0, close = 0;   // the call's tokens: its first (`metal` of `metal::simd_sum`), name, `)`
  std::size_t value_first = 0, value_last = 0;  // the exchanged value's, [first, last)
  std::size_t arg_first = 0, arg_last = 0;      // the lane, delta or mask argument's, [first, last); none: equal
  std::string op;                               // the exchange, a type of metal_regions.h
  std::string vote_type;                        // a ballot's, all's or any's result type; empty: the value's
  bool quad = false;                            // a quad-group's (width 4), else the SIMD-group's
};

/** True when `name` is a SIMD-group or quad-group function of a value or a bool (simd_sum, quad_ballot ...). */
bool exchange_function(const std::string& name);

/** Whether tokens [first, last] call an exchange function. */
bool holds_exchange(const std::vector<Token>& t, std::size_t first, std::size_t last);

/**
 * The calls of exchange functions in tokens [first, last], in order. False when one cannot be
 * followed: a template argument list, an argument count the function does not take, or a call
 * inside another's arguments.
 */
bool exchange_calls(const std::vector<Token>& t, std::size_t first, std::size_t last, std::vector<ExchangeCall>& out);

/**
 * True when a call of `calls` in [first, end] stands where a conditional or a logical operator
 * may skip it: a `?:`'s second or third operand, the right operand of `&&` or `||` (or where
 * those operands are unclear). A call in a condition, a left operand or a value is evaluated by
 * every thread that runs the statement.
 */
bool skipped_by_a_branch(const std::vector<Token>& t, std::size_t first, std::size_t end,
                         const std::vector<ExchangeCall>& calls);

/** The type of the call's value as the function's by-value parameter takes it (metal_regions.h). */
std::string exchanged_type(const std::vector<Token>& t, const ExchangeCall& call);

/**
 * True when the source declares a function of an exchange function's name (an overload for its
 * own type, MLX's `complex64_t simd_shuffle_down(complex64_t, uint16_t)`): its calls stay calls.
 */
bool declares_exchange_function(const std::vector<Token>& t);

}  // namespace metalcall::msl::regions
