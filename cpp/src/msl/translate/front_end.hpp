// The MSL front end's one entry point for the backends that translate MSL (CPU,
// CUDA): a source and options in, the translated unit out — its code for the
// target, the kernels' reflection, the function constants and the source map. And
// the one for backends whose own compiler takes MSL (Metal, the Metal simulator):
// the reflection alone, of the source as that compiler sees it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "metalcall/reflection.hpp"
#include "msl/lex/preprocessing.hpp"
#include "msl/parse/signature_parser.hpp"
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
  std::string language_version;  // "3.1" …; "" for the newest the prelude follows (preprocessing.hpp)
  bool checked = false;       // bounds-checked accesses (CPU only)
  ConstantValues constants;   // function-constant values as C++ literals, by index
  Preprocessor preprocessor;  // called only when the source needs preprocessing
  std::vector<std::string> only_kernels;  // empty: all kernels (TranslateOptions::only_kernels)
  bool (*stop)() = nullptr;   // polled in the long walks; true ends translate() with Interrupted
  /**
   * Threadgroup memory reads as 0xFF bytes at the start of every threadgroup, as Metal leaves it
   * undefined (METALCALL_POISON_UNINITIALIZED=1, core/backend.hpp; the Metal simulator always):
   * the translation defines METALCALL_POISON_THREADGROUP for the prelude (metal_poison.h).
   */
  bool poison_threadgroup = false;
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

/** The kernels and function constants of a source, as a compiler that takes MSL itself sees them. */
struct SourceReflection {
  std::vector<KernelInfo> kernels;  // callable kernels (template instantiations by host name), in source order
  std::vector<FunctionConstantDecl> function_constants;
  // Kernels that may reach a 64-bit atomic's min or max (atomic_min/max_explicit, by name as
  // fiber_kernels decides): pipelines that GPU families without 64-bit atomics refuse.
  std::vector<std::string> atomic64_kernels;
};

/**
 * Reflects `source` as Metal compiles it (P2.1 item 1): preprocessed with `defines` and
 * `__METAL_VERSION__` = `metal_version` (320 for MSL 3.2) when it needs preprocessing, by
 * `preprocessor`, as the translating backends do; so kernels under `#ifdef`/`#else` or
 * a false `#if`, kernels a macro writes and parameter types a macro names are seen as
 * the compiler sees them. Buffers every thread indexes by its grid position are marked
 * (ParamInfo::grid_indexed), as in translate(). Throws CompileError.
 */
SourceReflection reflect_source(const std::string& source, const Macros& defines, const Preprocessor& preprocessor,
                                int metal_version);

}  // namespace metalcall::msl
