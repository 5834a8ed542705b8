// The translation verifier for the CPU backend (see cpu_verify.hpp and
// metalcall/translation_check.hpp).
#include "backends/cpu/cpu_verify.hpp"

#include <cstdlib>
#include <cstring>

#include "backends/cpu/cpu_compiler.hpp"
#include "backends/cpu/cpu_verify_head.hpp"
#include "backends/translated/embedded_prelude.hpp"
#include "metalcall/errors.hpp"
#include "metalcall/translation_check.hpp"
#include "msl/translate/front_end.hpp"
#include "msl/verify/translation_verifier.hpp"

namespace metalcall {

namespace cpu {

std::vector<std::string> verifier_arguments() {
  // As cpu_compiler.cpp's flags; -march and the optimisation flags change no declaration
  // the checks read (the prelude's vector paths are chosen by the same __clang__ test).
  return {"-std=c++17", "-fsigned-char", "-fno-exceptions", "-fno-rtti", "-fopenmp-simd", "-Werror=vla"};
}

namespace {

msl::VerifyInput input_for(const std::string& code) {
  msl::VerifyInput input;
  input.code = code;
  for (std::size_t i = 0; i < translated::kEmbeddedPreludeCount; ++i)
    input.prelude.emplace_back(translated::kEmbeddedPrelude[i].name, translated::kEmbeddedPrelude[i].text);
  input.arguments = verifier_arguments();
  return input;
}

std::vector<std::string> verify_code(const std::string& code) { return verify_with_head(input_for(code)).problems; }

// Either the translator let through what MSL does not allow, or it and Clang disagree
// about the code: both are bugs the user should see rather than run.
std::string disagreement(const std::vector<std::string>& problems) {
  std::string message =
      "[cpu] the independent check of the translation (Clang's parse of the translated C++; METALCALL_VERIFY=0 "
      "turns it off) disagreed with the translator:";
  for (const auto& p : problems) message += "\n  " + p;
  return message;
}

}  // namespace

void verify_or_throw(const std::string& code) {
  const std::vector<std::string> problems = verify_code(code);
  if (problems.empty()) return;
  const std::string message = disagreement(problems);
  throw CompileError(message, message);
}

void prepare_verification(const std::string& code) noexcept {
  try {
    prepare_head(input_for(code));
  } catch (...) {  // no libclang, no room: the verification itself says so, or parses whole units
  }
}

}  // namespace cpu

bool translation_verification_requested() {
  // Asked for (a libclang that does not load is then a DeviceError) or turned off; by default,
  // on wherever libclang loads (the `libclang` wheel of metalcall's `verify` extra, or the system's).
  const char* env = std::getenv("METALCALL_VERIFY");
  if (env && *env) return std::strcmp(env, "0") != 0;
  std::string path_or_why;
  return msl::find_libclang(&path_or_why);
}

std::string cpu_translation_text(const std::string& source, bool checked,
                                 const std::vector<std::pair<std::string, std::string>>& defines) {
  CompileOptions options;
  options.defines = defines;
  return msl::translate(source, cpu::cpu_front_end_options(options, checked)).translation.code;
}

std::vector<std::string> verify_cpu_translation(const std::string& code) { return cpu::verify_code(code); }

TranslationCheck verify_cpu_translation_details(const std::string& code, bool precompiled_head,
                                                const std::string& head_pch) {
  msl::VerifyInput input = cpu::input_for(code);
  msl::Verdict verdict;
  if (!head_pch.empty()) {
    input.head_pch = head_pch;
    verdict = msl::verify_translation(input);
  } else {
    verdict = precompiled_head ? cpu::verify_with_head(std::move(input)) : msl::verify_translation(input);
  }
  return {verdict.problems, verdict.used_head_pch};
}

void check_cpu_translation(const std::string& code) { cpu::verify_or_throw(code); }

std::string translation_verifier_library(bool* found) {
  std::string path_or_why;
  *found = msl::find_libclang(&path_or_why);
  return path_or_why;
}

void set_wheel_libclang_path(const std::string& path) { msl::set_wheel_libclang(path); }

}  // namespace metalcall
