// Parses a translated unit with libclang and runs the verifier's checks (see
// translation_verifier.hpp).
#include "msl/verify/translation_verifier.hpp"

#include "metalcall/errors.hpp"
#include "msl/verify/call_graph_check.hpp"
#include "msl/verify/libclang_api.hpp"
#include "msl/verify/translation_facts.hpp"

namespace metalcall::msl {

using namespace clang_c;

bool find_libclang(std::string* path_or_why) {
  const Api* api = libclang(path_or_why);
  if (api) *path_or_why = api->path;
  return api != nullptr;
}

void set_wheel_libclang(const std::string& path) { clang_c::set_wheel_libclang(path); }

Verdict verify_translation(const VerifyInput& input) {
  std::string why;
  const Api* api = libclang(&why);
  if (!api) throw DeviceError("[verify] the independent check of the translation needs libclang, and " + why);
  // The unit and the prelude as unsaved files under a folder of no disk: nothing the
  // parse reads can be changed under it, and nothing is written.
  std::vector<std::string> names;
  std::vector<CXUnsavedFile> files;
  names.reserve(input.prelude.size());
  for (const auto& [name, text] : input.prelude) names.push_back(std::string(verify::kPreludeFolder) + "/" + name);
  for (std::size_t i = 0; i < input.prelude.size(); ++i)
    files.push_back({names[i].c_str(), input.prelude[i].second.data(), input.prelude[i].second.size()});
  files.push_back({verify::kUnitPath, input.code.data(), input.code.size()});
  std::vector<const char*> args = {"-x", "c++", "-I", verify::kPreludeFolder};
  for (const auto& a : input.arguments) args.push_back(a.c_str());

  Verdict verdict;
  verdict.libclang = api->path;
  CXIndex index = api->createIndex(0, 0);
  // createIndex turns on libclang's crash recovery, which puts its own SIGSEGV handler ahead of
  // every other in the process, the CPU device's stack guard's too, and re-raises faults it was
  // not expecting with their address lost: a kernel's stack overflow would end the process.
  api->toggleCrashRecovery(0);
  CXTranslationUnit unit = nullptr;
  const int status = api->parseTranslationUnit2(index, verify::kUnitPath, args.data(), int(args.size()), files.data(),
                                                unsigned(files.size()), CXTranslationUnit_KeepGoing | CXTranslationUnit_DetailedPreprocessingRecord, &unit);
  if (status != CXError_Success || !unit) {
    api->disposeIndex(index);
    verdict.problems.push_back("libclang (" + api->path + ") could not parse the translation (error " +
                               std::to_string(status) + ")");
    return verdict;
  }
  // Clang must accept what the host compiler accepts: an error means the two disagree on
  // the code, and nothing Clang read from it can be trusted.
  for (unsigned i = 0, n = api->getNumDiagnostics(unit); i < n && verdict.problems.size() < 5; ++i) {
    CXDiagnostic d = api->getDiagnostic(unit, i);
    if (api->getDiagnosticSeverity(d) >= CXDiagnostic_Error)
      verdict.problems.push_back("Clang: " + api->text(api->formatDiagnostic(d, 1 /* source location */)));
    api->disposeDiagnostic(d);
  }
  if (verdict.problems.empty()) {
    const verify::TranslationFacts facts = verify::read_facts(*api, unit, verify::user_range(input.code));
    verdict.problems = facts.problems;
    for (auto& p : verify::check_call_graph(facts)) verdict.problems.push_back(std::move(p));
  }
  api->disposeTranslationUnit(unit);
  api->disposeIndex(index);
  return verdict;
}

}  // namespace metalcall::msl
