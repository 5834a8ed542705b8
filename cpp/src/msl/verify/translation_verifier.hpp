// The second, independent check of the translation (DESIGN.md section 6): the C++ the
// translator wrote is parsed by Clang's front end (libclang, loaded at run time) and
// verified: no asm outside the prelude; in the user's code no function pointers, no
// casts from integers to pointers, no names declared outside the unit and the prelude;
// from every kernel, no recursion, and no barrier or SIMD-group function unless the
// translator gave the kernel the mode that honours them. docs/security.md says what it
// cannot see.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace metalcall::msl {

struct VerifyInput {
  std::string code;  // the translated unit, as the host compiler gets it
  std::vector<std::pair<std::string, std::string>> prelude;  // header name and text, found with -I
  std::vector<std::string> arguments;  // the host compiler's language flags (-std=c++17 …)
  // A precompiled header of translation_head(code) made by precompile_head with this prelude
  // and these arguments, or empty: the whole unit is parsed. It only saves time: a header
  // libclang refuses (another Clang's, damaged) or any error in the parse that read it
  // has the whole unit parsed again without it, and that parse decides.
  std::string head_pch;
};

struct Verdict {
  std::vector<std::string> problems;  // empty: verified
  std::string libclang;               // the library that parsed it
  bool used_head_pch = false;         // the verdict came from the parse that read head_pch
};

/** True when libclang can be loaded: `path_or_why` is then its path, else how to install it. */
bool find_libclang(std::string* path_or_why);

/** Where the libclang wheel's library is (set by the Python package at import). */
void set_wheel_libclang(const std::string& path);

/** What a precompiled header depends on of the libclang in use (libclang_api.hpp). Throws DeviceError without libclang. */
std::string libclang_identity();

/**
 * The translator's part of `code` ahead of the user's source, up to and including its
 * #include of the prelude: what a precompiled header can stand for. Empty when there is none.
 */
std::string translation_head(const std::string& code);

/** `code` with its first `head` bytes blanked (line breaks kept): a precompiled header declares
 *  them, and every later byte keeps its offset, line and column. */
std::string blank_head(const std::string& code, std::size_t head);

/**
 * Parses `head` (translation_head of a unit) with the input's prelude and arguments and
 * saves it at `path` as a precompiled header for VerifyInput::head_pch. False, with `why`,
 * when Clang reports an error in it, the checks find a problem in it (the whole unit's
 * parse then reports that), or the file cannot be written. Throws DeviceError without libclang.
 */
bool precompile_head(const VerifyInput& input, const std::string& head, const std::string& path, std::string* why);

/** Parses and verifies `input`. Throws DeviceError when libclang cannot be loaded. */
Verdict verify_translation(const VerifyInput& input);

}  // namespace metalcall::msl
