// One libclang parse for the translation verifier: its index and unit, disposed together.
// The prelude is given as unsaved files under a folder of no disk: nothing the parse
// reads can be changed under it, and nothing is written.
#pragma once

#include <string>
#include <vector>

#include "msl/verify/libclang_api.hpp"
#include "msl/verify/translation_verifier.hpp"

namespace metalcall::msl::verify {

class ParsedUnit {
 public:
  /**
   * Parses `text` as the file `path` in `language` ("c++", "c++-header"), with the
   * input's prelude and arguments, then `extra` arguments.
   */
  ParsedUnit(const clang_c::Api& api, const VerifyInput& input, const char* path, const std::string& text,
             const char* language, const std::vector<std::string>& extra, unsigned flags);
  ~ParsedUnit();
  ParsedUnit(const ParsedUnit&) = delete;
  ParsedUnit& operator=(const ParsedUnit&) = delete;

  clang_c::CXTranslationUnit unit() const { return unit_; }
  /** libclang's status (clang_c::CXError_Success when there is a unit). */
  int status() const { return status_; }
  bool parsed() const { return unit_ != nullptr && status_ == clang_c::CXError_Success; }
  /** Clang's errors, at most `max`, each with its place. */
  std::vector<std::string> errors(std::size_t max) const;

 private:
  const clang_c::Api& api_;
  clang_c::CXIndex index_ = nullptr;
  clang_c::CXTranslationUnit unit_ = nullptr;
  int status_ = -1;
};

}  // namespace metalcall::msl::verify
