// The kernel object wall (backends/cpu/object_check), tested apart from the front end:
// run.sh and macho.sh build shared objects (ELF, Mach-O) straight with the system compiler
// or clang's Darwin targets (no MSL, no translator) and this program checks each one:
// `object_check_test PATH expect [needle]`, where expect is "ok", "refused" (a CompileError
// whose message contains needle) or "unreadable" (a DeviceError). Exit status 0 when the
// outcome is the expected one.
#include <cstdio>
#include <cstring>
#include <string>

#include "backends/cpu/object_check.hpp"
#include "metalcall/errors.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s OBJECT ok|refused|unreadable [NEEDLE]\n", argv[0]);
    return 2;
  }
  const std::string path = argv[1], expect = argv[2], needle = argc > 3 ? argv[3] : "";
  std::string outcome, message;
  try {
    metalcall::cpu::check_kernel_object(path);
    outcome = "ok";
  } catch (const metalcall::CompileError& e) {
    outcome = "refused";
    message = e.what();
  } catch (const metalcall::DeviceError& e) {
    outcome = "unreadable";
    message = e.what();
  }
  const bool pass = outcome == expect && message.find(needle) != std::string::npos;
  std::printf("%s %s: %s%s%s\n", pass ? "PASS" : "FAIL", path.c_str(), outcome.c_str(), message.empty() ? "" : ": ",
              message.c_str());
  return pass ? 0 : 1;
}
