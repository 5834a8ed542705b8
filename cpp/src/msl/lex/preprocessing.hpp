// MSL's preprocessing policy: which sources need the C preprocessor, what it may read (the
// MSL headers, which the prelude provides, and nothing else: checked on the lines the
// preprocessor keeps, so a host #include in an inactive #if branch is fine), how
// __has_include is answered (from the MSL headers, never the file system), and the macros
// Apple's compiler predefines. Running a preprocessor is the caller's job.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "metalcall/errors.hpp"

namespace metalcall::msl {

using Macros = std::vector<std::pair<std::string, std::string>>;

/**
 * True when `source` has directives (other than metal includes and pragmas), a digraph `%:`
 * or a lone carriage return (either may hide a directive from a quick look), names one of
 * Clang's value macros (`__FLT16_MAX__`), or there are defines.
 */
bool needs_preprocessing(const std::string& source, const Macros& defines);

/** A directive that names a host file: refused if the preprocessor keeps it. */
struct RefusedDirective {
  int line = 0;
  int column = 0;
  std::string message;
  std::string rule;  // the MSL rule it breaks (docs/msl-rules.md), or "" for the include policy
};

struct PreprocessorInput {
  /** The text to hand the preprocessor (see text_for_preprocessor). */
  std::string text;
  /** Directive N stands in the text as the identifier __metalcall_refused_directive_N. */
  std::vector<RefusedDirective> refused;
};

/**
 * The source as the preprocessor should read it: translation phases 1-3 done (logical_lines),
 * `#include <metal_…>` / `<simd/…>` lines blanked (the prelude provides them), every other
 * directive that names a file (#include, #import, #include_next, #embed, #pragma GCC
 * dependency …) replaced by a marker that finish_preprocessed refuses where it survives (a
 * computed `#include HDR` by a marker line the preprocessor expands: an MSL header is kept),
 * `__has_include(<…>)` / `("…")` answered 1 or 0 from the MSL headers (`__has_embed` always 0), loop pragmas written
 * so that macros in them expand, then a #line naming the user's file: every line where it was.
 * CompileError for a name metalcall reserves (`__metalcall…`).
 */
PreprocessorInput text_for_preprocessor(const std::string& source);

/**
 * The preprocessor's output made final: the loop pragmas back as #pragma lines, and each
 * `_Pragma("body")` as a `#pragma body` line of its own (which the MSL rules check as any pragma).
 * CompileError at the user's line for a refused directive, or a `_Pragma` whose operand is no
 * plain string, holds a backslash or control character, or names a pragma the preprocessor runs.
 */
std::string finish_preprocessed(const std::string& output, const PreprocessorInput& input, const std::string& source);

/**
 * Rethrows the preprocessor's CompileError `e`; where it stopped at a `__has_include` (one
 * whose header name macros make, which text_for_preprocessor leaves to a refusing macro),
 * with a message that says so, at the same place.
 */
[[noreturn]] void rethrow_preprocessor_error(const CompileError& e, const std::string& source);

/** Whether `<name>` is an MSL header whose contents the prelude provides (`__has_include`). */
bool is_msl_header(const std::string& name);

/**
 * __METAL_VERSION__ for a `language_version` ("3.1" → 310; "" → 320, the MSL version the
 * prelude follows). CompileError for a version the translated backends do not know.
 */
int metal_version(const std::string& language_version);

/**
 * The macros Apple's compiler predefines for the version (__METAL_VERSION__; __METAL__ from
 * MSL 3.0, __METAL_MACOS__ before; __HAVE_BFLOAT__ from 3.1).
 */
Macros predefined_macros(const std::string& language_version);

/** The macros to define for the preprocessor: predefined_macros, Clang's value macros (clang_macros.hpp), then `defines`. */
Macros predefined_macros(const Macros& defines, const std::string& language_version);

}  // namespace metalcall::msl
