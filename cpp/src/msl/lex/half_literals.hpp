// The value of a half literal (`0.1h`, `65504.0h`, `0x1p-24h`), rounded once from its
// decimal or hexadecimal spelling, as Apple's compiler reads it. Writing the literal as a
// float and converting that float to half rounds twice: a spelling just past a point halfway
// between two halves becomes that halfway float, which then rounds to even, the wrong way.
#pragma once

#include <string>

namespace metalcall::msl {

/**
 * `spelling` without its h/H suffix (digit separators allowed) as a float literal holding the
 * half it names exactly (`0x1004000p-24f`), or "" when it names no finite half (it overflows to
 * infinity: then any float spelling of it converts to infinity too) or is no number. strtod reads
 * the spelling, so under a locale whose decimal point is not '.' a spelling with a point is
 * "" too: the caller's float spelling, as before.
 */
std::string exact_half_literal(const std::string& spelling);

}  // namespace metalcall::msl
