// What each prelude part declares, as the build wrote it (cpp/build_tools/prelude_part_tables_main.cpp
// runs scan_prelude_parts, prelude_parts_scan.hpp, over the embedded headers): prelude_parts.cpp
// reads it.
#pragma once

#include <cstddef>

namespace metalcall::translated::part_table {

struct PartTable {
  const char* part;                 // its name in parts_table() ("HALF"), a check of the order
  const char* const* names;         // sorted, byte order
  std::size_t name_count;
  const char* const (*pasted)[2];   // prefix and suffix of each pasted-name shape
  std::size_t pasted_count;
};

extern const bool kComplete;  // every embedded header belongs to a part or is always in
extern const PartTable kParts[];
extern const std::size_t kPartCount;

}  // namespace metalcall::translated::part_table
