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
};

struct Verdict {
  std::vector<std::string> problems;  // empty: verified
  std::string libclang;               // the library that parsed it
};

/** True when libclang can be loaded: `path_or_why` is then its path, else how to install it. */
bool find_libclang(std::string* path_or_why);

/** Where the libclang wheel's library is (set by the Python package at import). */
void set_wheel_libclang(const std::string& path);

/** Parses and verifies `input`. Throws DeviceError when libclang cannot be loaded. */
Verdict verify_translation(const VerifyInput& input);

}  // namespace metalcall::msl
