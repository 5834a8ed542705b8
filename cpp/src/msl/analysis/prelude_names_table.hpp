// The prelude's names as the build wrote them (cpp/build_tools/prelude_names_main.cpp runs
// scan_prelude, prelude_scan.hpp, over the prelude's text): sorted arrays, byte order, one per set
// of PreludeNames. stdlib_names.cpp reads them.
#pragma once

#include <cstddef>

namespace metalcall::msl::prelude_table {

extern const char* const kAll[];
extern const std::size_t kAllCount;
extern const char* const kDeclared[];
extern const std::size_t kDeclaredCount;
extern const char* const kMacros[];
extern const std::size_t kMacrosCount;
extern const char* const kIdentifiers[];
extern const std::size_t kIdentifiersCount;

}  // namespace metalcall::msl::prelude_table
