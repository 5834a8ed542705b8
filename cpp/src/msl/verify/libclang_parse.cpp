// Parses with libclang (see libclang_parse.hpp).
#include "msl/verify/libclang_parse.hpp"

#include "msl/verify/translation_facts.hpp"

namespace metalcall::msl::verify {

using namespace clang_c;

ParsedUnit::ParsedUnit(const Api& api, const VerifyInput& input, const char* path, const std::string& text,
                       const char* language, const std::vector<std::string>& extra, unsigned flags)
    : api_(api) {
  std::vector<std::string> names;
  std::vector<CXUnsavedFile> files;
  names.reserve(input.prelude.size());
  for (const auto& [name, content] : input.prelude) names.push_back(std::string(kPreludeFolder) + "/" + name);
  for (std::size_t i = 0; i < input.prelude.size(); ++i)
    files.push_back({names[i].c_str(), input.prelude[i].second.data(), input.prelude[i].second.size()});
  files.push_back({path, text.data(), text.size()});
  std::vector<const char*> args = {"-x", language, "-I", kPreludeFolder};
  for (const auto& a : input.arguments) args.push_back(a.c_str());
  for (const auto& a : extra) args.push_back(a.c_str());
  // Every declaration is visited, a precompiled header's too (the walk skips the prelude's):
  // an index that leaves those out also changed what the walk read of a unit's templates.
  index_ = api.createIndex(0, 0);
  // createIndex turns on libclang's crash recovery, which puts its own SIGSEGV handler ahead of
  // every other in the process, the CPU device's stack guard's too, and re-raises faults it was
  // not expecting with their address lost: a kernel's stack overflow would end the process.
  api.toggleCrashRecovery(0);
  status_ = api.parseTranslationUnit2(index_, path, args.data(), int(args.size()), files.data(), unsigned(files.size()),
                                      flags, &unit_);
}

ParsedUnit::~ParsedUnit() {
  if (unit_) api_.disposeTranslationUnit(unit_);
  api_.disposeIndex(index_);
}

std::vector<std::string> ParsedUnit::errors(std::size_t max) const {
  std::vector<std::string> out;
  for (unsigned i = 0, n = api_.getNumDiagnostics(unit_); i < n && out.size() < max; ++i) {
    CXDiagnostic d = api_.getDiagnostic(unit_, i);
    if (api_.getDiagnosticSeverity(d) >= CXDiagnostic_Error)
      out.push_back("Clang: " + api_.text(api_.formatDiagnostic(d, 1 /* source location */)));
    api_.disposeDiagnostic(d);
  }
  return out;
}

}  // namespace metalcall::msl::verify
