// What the build steps of cpp/build_tools/ share: a string as a C++ string literal (quotes and
// backslashes escaped, bytes outside printable ASCII in octal), for the sources they write.
#pragma once

#include <cstdio>
#include <string>

inline std::string c_string_literal(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += static_cast<char>(c);
    else if (c >= 0x20 && c < 0x7f) out += static_cast<char>(c);
    else {
      char octal[8];
      std::snprintf(octal, sizeof octal, "\\%03o", c);
      out += octal;
    }
  }
  return out + "\"";
}
