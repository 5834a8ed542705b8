// A developer tool: the NVRTC options that select a CUDA translation's prelude parts
// (backends/translated/prelude_parts.hpp), one line per file named; with --why, each word of
// the file that brings in a part. Built by tools/cuda_prelude_parts_check.py.
#include <cctype>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>

#include "backends/translated/prelude_parts.hpp"

int main(int argc, char** argv) {
  bool why = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--why") {
      why = true;
      continue;
    }
    std::ifstream in(arg, std::ios::binary);
    if (!in) {
      std::cerr << "cannot read " << arg << "\n";
      return 2;
    }
    std::ostringstream s;
    s << in.rdbuf();
    const std::string text = s.str();
    for (const auto& o : metalcall::translated::prelude_part_options(text)) std::cout << o << " ";
    std::cout << "\n";
    if (!why) continue;
    std::set<std::string> words;
    for (std::size_t k = 0; k < text.size();) {
      if (std::isalpha(static_cast<unsigned char>(text[k])) || text[k] == '_') {
        std::size_t e = k;
        while (e < text.size() && (std::isalnum(static_cast<unsigned char>(text[e])) || text[e] == '_')) ++e;
        words.insert(text.substr(k, e - k));
        k = e;
      } else {
        ++k;
      }
    }
    for (const auto& w : words) {
      const auto parts = metalcall::translated::prelude_parts(w);
      if (parts.empty()) continue;
      std::cout << "  " << w << ":";
      for (const auto& p : parts) std::cout << " " << p;
      std::cout << "\n";
    }
  }
  return 0;
}
