// The system C++ compiler that turns translated kernels into shared objects:
// METALCALL_CXX, else clang++, else g++, else c++.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "msl/translator.hpp"

namespace metalcall::cpu {

class HostCompiler {
 public:
  /** The process-wide compiler (found once). */
  static HostCompiler& instance();

  bool available() const { return !path_.empty(); }
  /** Why none was found and how to install one. */
  std::string unavailable_reason() const;
  /** Compiler, version and target flags: part of every cache key. */
  const std::string& identity() const { return identity_; }

  /**
   * Builds `translation` into a shared object and returns its path, from the disk
   * cache when it is there. Throws CompileError (mapped to the user's source) or
   * DeviceError when there is no compiler.
   */
  std::string build(const msl::Translation& translation, const std::string& user_source, bool fast_math);

  /**
   * Runs the preprocessor over MSL `source` with `defines` (and __METAL_VERSION__),
   * leaving linemarkers that name the user's lines. `#include <metal_…>` lines are
   * dropped (the prelude provides them); any other #include is a CompileError.
   */
  std::string preprocess(const std::string& source, const std::vector<std::pair<std::string, std::string>>& defines);

  /** True when `source` has directives (other than metal includes and pragmas) or there are defines. */
  static bool needs_preprocessing(const std::string& source,
                                  const std::vector<std::pair<std::string, std::string>>& defines);

 private:
  HostCompiler();
  std::string prelude_folder();

  std::string path_;
  std::string identity_;
  std::string prelude_folder_;
};

}  // namespace metalcall::cpu
