// A developer tool: prints the C++ (CPU) or CUDA C++ translation of an MSL file, the code the
// backend would hand its compiler (the system compiler, or NVRTC: tools/nvrtc_check.py builds it).
//   translate_main [--target cpu|cuda] [--checked] [-D NAME[=VALUE]]... [--constant NAME=V[,V...]]... FILE.metal
// (translation on stdout; --checked: the CPU device's checked mode, `mc.Device("cpu", checked=True)`;
// --constant: a [[function_constant]]'s value, a vector's components comma-separated, written as the
// backends write them: backends/translated/constant_literals.)
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "backends/translated/constant_literals.hpp"
#include "metalcall/errors.hpp"
#include "msl/translate/front_end.hpp"

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The backend's preprocessor call (backends/translated/host_cxx.cpp: -E -undef -nostdinc, the
// macros as -D), run on $CXX (default c++) through a temporary file.
std::string preprocess(const std::string& text, const metalcall::msl::Macros& macros) {
  char path[] = "/tmp/translate-main-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) throw std::runtime_error("cannot create a temporary file");
  close(fd);
  std::ofstream(path, std::ios::binary) << text;
  const char* cxx = std::getenv("CXX");
  std::string cmd = std::string(cxx && *cxx ? cxx : "c++") + " -E -undef -nostdinc -x c++ -std=c++17";
  for (const auto& [name, value] : macros) cmd += " " + shell_quote("-D" + name + "=" + value);
  cmd += " " + std::string(path);
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[65536];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int rc = pclose(p);
    std::remove(path);
    if (rc != 0) throw metalcall::CompileError("the preprocessor failed (" + cmd + ")");
    return out;
  }
  std::remove(path);
  throw std::runtime_error("cannot run " + cmd);
}

int usage() {
  std::cerr << "usage: translate_main [--target cpu|cuda] [--checked] [-D NAME[=VALUE]]... "
               "[--constant NAME=V[,V...]]... FILE.metal\n";
  return 2;
}

// One value as the Python API reads it: true/false, an integer, else a float.
metalcall::Argument constant_value(const std::string& text) {
  if (text == "true" || text == "false") return metalcall::Argument::from_bool(text == "true");
  std::size_t used = 0;
  try {
    const long long v = std::stoll(text, &used);
    if (used == text.size()) return metalcall::Argument::from_int(v);
  } catch (const std::exception&) {
  }
  return metalcall::Argument::from_float(std::stod(text));
}

// NAME=V or NAME=V1,V2,...: a scalar, or a vector's components.
metalcall::FunctionConstant parse_constant(const std::string& spec) {
  metalcall::FunctionConstant c;
  const std::size_t eq = spec.find('=');
  if (eq == std::string::npos) throw std::runtime_error("--constant takes NAME=VALUE, not " + spec);
  c.name = spec.substr(0, eq);
  std::vector<metalcall::Argument> values;
  std::stringstream list(spec.substr(eq + 1));
  for (std::string v; std::getline(list, v, ',');) values.push_back(constant_value(v));
  if (values.size() == 1) c.value = values[0];
  else c.components = std::move(values);
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  metalcall::msl::FrontEndOptions options;
  std::string file;
  std::vector<std::string> constants;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--target" && i + 1 < argc) {
      const std::string t = argv[++i];
      if (t != "cpu" && t != "cuda") return usage();
      options.target = t == "cuda" ? metalcall::msl::Target::cuda : metalcall::msl::Target::cpu;
    } else if (a == "--checked") {
      options.checked = true;
    } else if (a.rfind("-D", 0) == 0) {
      std::string d = a.size() > 2 ? a.substr(2) : (i + 1 < argc ? argv[++i] : "");
      const std::size_t eq = d.find('=');
      options.defines.emplace_back(d.substr(0, eq), eq == std::string::npos ? "1" : d.substr(eq + 1));
    } else if (a == "--constant" && i + 1 < argc) {
      constants.push_back(argv[++i]);
    } else if (!a.empty() && a[0] != '-' && file.empty()) {
      file = a;
    } else {
      return usage();
    }
  }
  if (file.empty()) return usage();
  options.preprocessor = preprocess;
  try {
    const std::string source = read_file(file);
    if (!constants.empty()) {  // the declared constants first, then the translation with their literals
      std::vector<metalcall::FunctionConstant> given;
      for (const std::string& spec : constants) given.push_back(parse_constant(spec));
      const auto declared = metalcall::msl::translate(source, options).translation.function_constants;
      options.constants = metalcall::translated::constant_literals(declared, given);
    }
    const auto unit = metalcall::msl::translate(source, options);
    std::cout << unit.translation.code;
    std::cerr << unit.translation.kernels.size() << " kernel(s)\n";
    return 0;
  } catch (const metalcall::CompileError& e) {
    std::cerr << e.what() << "\n" << e.log() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "translate_main: " << e.what() << "\n";
    return 1;
  }
}
