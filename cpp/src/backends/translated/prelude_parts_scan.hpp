// What each part of the MSL prelude declares, read from the headers' text (see prelude_parts.hpp
// for how a kernel's parts are chosen). Run at build time: translated.cmake builds
// cpp/build_tools/prelude_part_tables_main.cpp, which writes the result as a table
// (prelude_part_tables.hpp), so no process reads the 400 KB of headers.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backends/translated/embedded_prelude.hpp"

namespace metalcall::translated {

struct PartNames {
  std::set<std::string> names;  // names the part declares (or that its macro calls name first)
  // The shapes of names its macros paste together (`mtl_##S##2x2`: prefix "mtl_", suffix "2x2").
  std::vector<std::pair<std::string, std::string>> pasted;
};

struct PartScan {
  bool complete = true;          // every header belongs to a part or is always in
  std::vector<PartNames> parts;  // per part of parts_table() (prelude_part_list.hpp)
};

/** The names each part of `files` (the prelude's headers, by name) declares. */
PartScan scan_prelude_parts(const EmbeddedFile* files, std::size_t count);

}  // namespace metalcall::translated
