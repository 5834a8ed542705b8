// Explicit 4-, 8- or 16-byte copies from device to threadgroup memory, for the CUDA target:
// `*(threadgroup T*)(d) = *(device [const] T*)(s);` goes to the prelude's
// metal::mtl_rt::mtl_async_copy, which (with METALCALL_ASYNC_COPIES=1, sm_80+) issues it as
// cp.async and lets the next threadgroup_barrier wait for it (prelude/metal_sync.h).
// Any other statement stays as written.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/**
 * Edits (token index → text, "" to leave a token out) that write each statement
 * `*(threadgroup T*)(d) = *(device [const] T*)(s);` (T one name, the same on both sides;
 * the statement after `;`, `{`, `}` or `)`) as
 * `metal::mtl_rt::mtl_async_copy((threadgroup T*)(d), (device [const] T*)(s));`.
 */
std::map<std::size_t, std::string> async_copy_edits(const std::vector<Token>& t);

}  // namespace metalcall::msl
