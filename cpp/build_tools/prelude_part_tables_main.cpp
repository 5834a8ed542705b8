// Build step (backends/translated/translated.cmake): writes what each prelude part declares
// (backends/translated/prelude_part_tables.hpp) as C++ source, so that no process reads the
// prelude's headers to choose a kernel's parts.
//   prelude_part_tables_main OUT.cpp   (the headers come linked in: embedded_prelude.cpp)
#include <cstdio>
#include <exception>
#include <fstream>
#include <string>

#include "c_string_literal.hpp"

#include "backends/translated/prelude_part_list.hpp"
#include "backends/translated/prelude_parts_scan.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT.cpp\n", argv[0]);
    return 2;
  }
  try {
    using namespace metalcall::translated;
    const PartScan scan = scan_prelude_parts(kEmbeddedPrelude, kEmbeddedPreludeCount);
    const auto& parts = parts_table();
    std::ofstream out(argv[1], std::ios::binary | std::ios::trunc);
    out << "// Generated at build time by cpp/build_tools/prelude_part_tables_main.cpp from cpp/src/msl/prelude; "
           "do not edit.\n#include \"backends/translated/prelude_part_tables.hpp\"\n\n"
           "namespace metalcall::translated::part_table {\nnamespace {\n";
    for (std::size_t p = 0; p < scan.parts.size(); ++p) {
      out << "const char* const kNames" << p << "[] = {\n";
      for (const std::string& n : scan.parts[p].names) out << "    " << c_string_literal(n) << ",\n";
      out << "    nullptr};\n";
      if (scan.parts[p].pasted.empty()) continue;
      out << "const char* const kPasted" << p << "[][2] = {\n";
      for (const auto& [prefix, suffix] : scan.parts[p].pasted)
        out << "    {" << c_string_literal(prefix) << ", " << c_string_literal(suffix) << "},\n";
      out << "};\n";
    }
    out << "}  // namespace\n\nconst bool kComplete = " << (scan.complete ? "true" : "false") << ";\n";
    out << "const PartTable kParts[] = {\n";
    for (std::size_t p = 0; p < scan.parts.size(); ++p) {
      out << "    {" << c_string_literal(parts[p].name) << ", kNames" << p << ", " << scan.parts[p].names.size() << ", ";
      if (scan.parts[p].pasted.empty()) out << "nullptr, 0},\n";
      else out << "kPasted" << p << ", " << scan.parts[p].pasted.size() << "},\n";
    }
    out << "};\nconst std::size_t kPartCount = " << scan.parts.size() << ";\n"
        << "}  // namespace metalcall::translated::part_table\n";
    out.close();
    if (!out) {
      std::fprintf(stderr, "prelude_part_tables_main: cannot write %s\n", argv[1]);
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "prelude_part_tables_main: %s\n", e.what());
    return 1;
  }
  return 0;
}
