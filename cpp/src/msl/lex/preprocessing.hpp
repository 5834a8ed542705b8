// MSL's preprocessing policy: which directives make a source need the C
// preprocessor, what it may #include (only the built-in metal_ headers), and the
// macros Apple's compiler predefines. Running a preprocessor is the caller's job.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace metalcall::msl {

using Macros = std::vector<std::pair<std::string, std::string>>;

/** True when `source` has directives (other than metal includes and pragmas) or there are defines. */
bool needs_preprocessing(const std::string& source, const Macros& defines);

/**
 * The text to hand the preprocessor: `#include <metal_…>` / `<simd/…>` lines blanked
 * (the prelude provides them), every line where it was, and a #line naming the user's
 * file. Any other #include is a CompileError at its line.
 */
std::string text_for_preprocessor(const std::string& source);

/**
 * The macros to define: those of Apple's compiler (__METAL_VERSION__, 320 for MSL 3.2, the
 * version the prelude follows, unless a backend whose compiler is Apple's says which), then `defines`.
 */
Macros predefined_macros(const Macros& defines, int metal_version = 320);

}  // namespace metalcall::msl
