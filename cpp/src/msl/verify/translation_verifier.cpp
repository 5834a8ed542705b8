// Parses a translated unit with libclang and runs the verifier's checks (see
// translation_verifier.hpp).
#include "msl/verify/translation_verifier.hpp"

#include "metalcall/errors.hpp"
#include "msl/verify/call_graph_check.hpp"
#include "msl/verify/libclang_api.hpp"
#include "msl/verify/libclang_parse.hpp"
#include "msl/verify/translation_facts.hpp"
#include "msl/verify/verifier_stack.hpp"

namespace metalcall::msl {

using namespace clang_c;

namespace {

constexpr unsigned kParseFlags = CXTranslationUnit_KeepGoing | CXTranslationUnit_DetailedPreprocessingRecord;

const Api& api_or_throw() {
  std::string why;
  const Api* api = libclang(&why);
  if (!api) throw DeviceError("[verify] the independent check of the translation needs libclang, and " + why);
  return *api;
}

void check(const Api& api, const verify::ParsedUnit& parsed, const std::string& code, Verdict& verdict) {
  const verify::TranslationFacts facts = verify::read_facts(api, parsed.unit(), verify::user_range(code));
  verdict.problems = facts.problems;
  for (auto& p : verify::check_call_graph(facts)) verdict.problems.push_back(std::move(p));
}

}  // namespace

bool find_libclang(std::string* path_or_why) {
  const Api* api = libclang(path_or_why);
  if (api) *path_or_why = api->path;
  return api != nullptr;
}

void set_wheel_libclang(const std::string& path) { clang_c::set_wheel_libclang(path); }

std::string libclang_identity() { return api_or_throw().identity; }

std::string translation_head(const std::string& code) {
  const std::string include = "\n#include \"metal_stdlib.h\"\n";
  const std::size_t at = code.find(include);
  const verify::UserRange user = verify::user_range(code);
  if (at == std::string::npos || user.begin == 0 || at + include.size() > user.begin) return {};
  return code.substr(0, at + include.size());
}

std::string blank_head(const std::string& code, std::size_t head) {
  std::string out = code;
  for (std::size_t i = 0; i < head && i < out.size(); ++i)
    if (out[i] != '\n') out[i] = ' ';
  return out;
}

namespace {

bool precompile_head_here(const VerifyInput& input, const std::string& head, const std::string& path,
                          std::string* why) {
  const Api& api = api_or_throw();
  verify::ParsedUnit parsed(api, input, verify::kHeadPath, head, "c++-header", {},
                            kParseFlags | CXTranslationUnit_Incomplete | CXTranslationUnit_ForSerialization);
  if (!parsed.parsed()) {
    *why = "libclang could not parse it (error " + std::to_string(parsed.status()) + ")";
    return false;
  }
  // The walk of a unit that reads the header skips its declarations: they are checked here.
  std::vector<std::string> problems = parsed.errors(1);
  if (problems.empty()) problems = verify::read_facts(api, parsed.unit(), verify::UserRange{}).problems;
  if (!problems.empty()) {
    *why = problems.front();
    return false;
  }
  const int saved = api.saveTranslationUnit(parsed.unit(), path.c_str(), 0);
  if (saved != 0) *why = "libclang could not save it (error " + std::to_string(saved) + ")";
  return saved == 0;
}

Verdict verify_translation_here(const VerifyInput& input) {
  const Api& api = api_or_throw();
  Verdict verdict;
  verdict.libclang = api.path;
  const std::size_t head = input.head_pch.empty() ? 0 : translation_head(input.code).size();
  if (head) {
    const std::string code = blank_head(input.code, head);
    verify::ParsedUnit parsed(api, input, verify::kUnitPath, code, "c++", {"-include-pch", input.head_pch}, kParseFlags);
    // A header libclang refuses is an error of this parse, as an error in the code is:
    // either way the parse below, of the whole unit, decides.
    if (parsed.parsed() && parsed.errors(1).empty()) {
      verdict.used_head_pch = true;
      check(api, parsed, code, verdict);
      return verdict;
    }
  }
  verify::ParsedUnit parsed(api, input, verify::kUnitPath, input.code, "c++", {}, kParseFlags);
  if (!parsed.parsed()) {
    verdict.problems.push_back("libclang (" + api.path + ") could not parse the translation (error " +
                               std::to_string(parsed.status()) + ")");
    return verdict;
  }
  // Clang must accept what the host compiler accepts: an error means the two disagree on
  // the code, and nothing Clang read from it can be trusted.
  verdict.problems = parsed.errors(5);
  if (verdict.problems.empty()) check(api, parsed, input.code, verdict);
  return verdict;
}

}  // namespace

// Both parse on the verifier's own stack (verifier_stack.hpp): libclang's recursion follows the
// depth of the code, and an overflow would end the process.
bool precompile_head(const VerifyInput& input, const std::string& head, const std::string& path, std::string* why) {
  bool made = false;
  verify::run_on_verifier_stack([&] { made = precompile_head_here(input, head, path, why); });
  return made;
}

Verdict verify_translation(const VerifyInput& input) {
  Verdict verdict;
  verify::run_on_verifier_stack([&] { verdict = verify_translation_here(input); });
  return verdict;
}

}  // namespace metalcall::msl
