// The names the MSL prelude's text (cpp/src/msl/prelude/*.h) declares and spells, read with the
// front end's own lexer and declaration reader. Tokenizing 400 KB of prelude took ~25 ms of every
// process's first compile on the H200, so this runs at build time (stdlib_names.cmake builds
// cpp/build_tools/prelude_names_main.cpp and runs it) and the library reads its table
// (stdlib_names.cpp).
#pragma once

#include <cstddef>
#include <set>
#include <string>

namespace metalcall::msl {

struct PreludeNames {
  std::set<std::string> all;          // every name declared, prototyped or pasted by its macros
  std::set<std::string> declared;     // what it surely defines itself: functions, types, macros, macro-pasted names
  std::set<std::string> macros;       // the macros it defines
  std::set<std::string> identifiers;  // every identifier its text spells
};

/** The names of `count` prelude texts. Throws CompileError where a text does not tokenize. */
PreludeNames scan_prelude(const char* const* texts, std::size_t count);

}  // namespace metalcall::msl
