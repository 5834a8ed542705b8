// The MSL front end's one entry point for the backends that translate MSL (CPU,
// CUDA): a source and options in, the translated unit out — its code for the
// target, the kernels' reflection, the function constants and the source map.
#pragma once

#include <functional>
#include <string>

#include "msl/lex/preprocessing.hpp"
#include "msl/translate/translator.hpp"

namespace metalcall::msl {

enum class Target { cpu, cuda };

/**
 * Runs a C preprocessor over `text` (from text_for_preprocessor) with `macros`
 * defined and returns its output with linemarkers. Throws CompileError.
 */
using Preprocessor = std::function<std::string(const std::string& text, const Macros& macros)>;

struct FrontEndOptions {
  Target target = Target::cpu;
  Macros defines;             // the user's macros
  bool checked = false;       // bounds-checked accesses (CPU only)
  ConstantValues constants;   // function-constant values as C++ literals, by index
  Preprocessor preprocessor;  // called only when the source needs preprocessing
  std::vector<std::string> only_kernels;  // empty: all kernels (TranslateOptions::only_kernels)
};

struct TranslatedUnit {
  Translation translation;
  std::string preprocessed;  // the preprocessor's output; empty when none was needed
};

/**
 * Preprocesses `source` when it needs it, reflects its kernels and translates it
 * for the target. `preprocessed`, when given, is an earlier unit's preprocessor
 * output to reuse (a specialisation of the same source). Throws CompileError.
 */
TranslatedUnit translate(const std::string& source, const FrontEndOptions& options,
                         const std::string* preprocessed = nullptr);

}  // namespace metalcall::msl
