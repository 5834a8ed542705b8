// What the translation verifier reads from libclang's AST of a translated unit: the
// node-kind findings (asm, function pointers, integer-to-pointer casts, names declared
// outside the unit and the prelude) and the call graph of the code the translator
// wrote, with the prelude's synchronising functions as its leaves.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "msl/verify/libclang_api.hpp"

namespace metalcall::msl::verify {

/** Where a declaration or statement comes from. */
enum class Origin { user, translator, prelude, foreign };

struct FunctionFacts {
  std::string name;        // as declared
  std::string where;       // source.metal:line, or the translator's file
  Origin origin = Origin::user;
  std::set<std::string> calls;        // keys of the functions it calls, constructs, destroys or names
  std::set<std::string> called;       // of those, the ones a call expression calls (names the kernel)
  std::set<std::string> unresolved;   // names of calls Clang could not resolve (templates)
  std::string synchronises;           // the first barrier / SIMD-group name it uses, and where; empty for none
  bool enters_regions = false;
  bool is_kernel = false;             // an entry point calls it (call_graph_check.cpp marks it)
};

/** The mode the translator gave a kernel, read from its entry point (target_cpu.cpp). */
enum class EntryMode { loop, fibers, regions };

struct EntryFacts {
  std::string symbol;       // metalcall_entry_<n>
  std::string key;          // its function's key
  EntryMode mode = EntryMode::loop;
};

struct TranslationFacts {
  std::vector<std::string> problems;                // node-kind findings, with their places
  std::map<std::string, FunctionFacts> functions;   // by key (the canonical declaration's USR)
  std::multimap<std::string, std::string> by_name;  // function name -> key, for unresolved calls
  std::vector<EntryFacts> entries;
};

/**
 * The name under which by_name lists every function named other than in a call (an
 * address or a template argument): what a call through a template's function-pointer
 * parameter (MSL allows them: compile-time constants) may reach.
 */
constexpr const char* kNamedFunctions = "<a function named as a value>";

/** The virtual paths the verifier gives libclang. */
constexpr const char* kUnitPath = "/metalcall-verify/translation.cpp";
constexpr const char* kPreludeFolder = "/metalcall-verify/prelude";
/** The unit's head (translation_head) as a precompiled header's main file: the translator's, as in the unit. */
constexpr const char* kHeadPath = "/metalcall-verify/translation-head.hpp";

/** The bytes of the unit that hold the user's source: after its `#line 1 "source.metal"`, before the entry points. */
struct UserRange {
  unsigned begin = 0, end = 0;
};
UserRange user_range(const std::string& code);

/** Reads the facts of a parsed unit. */
TranslationFacts read_facts(const clang_c::Api& api, clang_c::CXTranslationUnit unit, UserRange user);

/** True for a prelude name whose use makes threads wait for each other (barriers, SIMD- and quad-group functions, simdgroup matrices). */
bool is_synchronising(const std::string& name);

}  // namespace metalcall::msl::verify
