// Build step (msl/analysis/stdlib_names.cmake): writes the prelude's name table
// (msl/analysis/prelude_names_table.hpp) as C++ source, so that no process tokenizes the prelude
// to learn the names a kernel may call.
//   prelude_names_main OUT.cpp   (the prelude's text comes linked in: msl_prelude_texts.cpp)
#include <cstdio>
#include <exception>
#include <fstream>
#include <set>
#include <string>

#include "c_string_literal.hpp"

#include "msl/analysis/prelude_scan.hpp"

namespace metalcall::msl {
extern const char* const kPreludeTexts[];
extern const std::size_t kPreludeTextCount;
}  // namespace metalcall::msl

namespace {

void write_array(std::ofstream& out, const char* name, const std::set<std::string>& names) {
  out << "const char* const " << name << "[] = {\n";
  for (const std::string& n : names) out << "    " << c_string_literal(n) << ",\n";
  out << "    nullptr};\nconst std::size_t " << name << "Count = " << names.size() << ";\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT.cpp\n", argv[0]);
    return 2;
  }
  try {
    using namespace metalcall::msl;
    const PreludeNames names = scan_prelude(kPreludeTexts, kPreludeTextCount);
    std::ofstream out(argv[1], std::ios::binary | std::ios::trunc);
    out << "// Generated at build time by cpp/build_tools/prelude_names_main.cpp from cpp/src/msl/prelude; do not edit.\n"
           "#include \"msl/analysis/prelude_names_table.hpp\"\n\nnamespace metalcall::msl::prelude_table {\n";
    write_array(out, "kAll", names.all);
    write_array(out, "kDeclared", names.declared);
    write_array(out, "kMacros", names.macros);
    write_array(out, "kIdentifiers", names.identifiers);
    out << "}  // namespace metalcall::msl::prelude_table\n";
    out.close();
    if (!out) {
      std::fprintf(stderr, "prelude_names_main: cannot write %s\n", argv[1]);
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "prelude_names_main: %s\n", e.what());
    return 1;
  }
  return 0;
}
