// The front end's one call: preprocess when needed, then reflect and translate.
#include "msl/translate/front_end.hpp"

#include "metalcall/errors.hpp"
#include "msl/analysis/grid_indexing.hpp"
#include "msl/analysis/msl_rules.hpp"
#include "msl/analysis/nesting_limits.hpp"
#include "msl/analysis/sync_reachability.hpp"
#include "msl/lex/lexer.hpp"
#include "msl/passes/coherent_qualifiers.hpp"
#include "msl/passes/render_functions.hpp"
#include "msl/errors/front_end_stop.hpp"

namespace metalcall::msl {

TranslatedUnit translate(const std::string& source, const FrontEndOptions& options, const std::string* preprocessed) {
  const FrontEndStopScope stoppable(options.stop);
  TranslatedUnit unit;
  const Macros predefined = predefined_macros(options.language_version);  // refuses an unknown version
  if (preprocessed) {
    unit.preprocessed = *preprocessed;
  } else if (needs_preprocessing(source, options.defines)) {
    const PreprocessorInput input = text_for_preprocessor(source);
    if (!options.preprocessor) throw DeviceError("this source needs the C preprocessor, and none was given");
    // The include policy on what the preprocessor kept: a host #include in an inactive branch is no error.
    std::string output;
    try {
      output = options.preprocessor(input.text, predefined_macros(options.defines, options.language_version));
    } catch (const CompileError& e) {
      rethrow_preprocessor_error(e, source);
    }
    unit.preprocessed = finish_preprocessed(output, input, source);
  }
  // MSL, not host C++: refused before any of it reaches the target's compiler.
  std::vector<Token> tokens = unit.preprocessed.empty() ? tokenize(source) : tokenize(unit.preprocessed, true);
  check_nesting(tokens, source);  // first: the walks below follow nesting
  drop_render_functions(tokens);
  drop_coherent_qualifiers(tokens);
  check_msl_rules(tokens, source, options.checked);
  TranslateOptions translate;
  translate.constants = options.constants;
  translate.checked = options.checked;
  translate.only_kernels = options.only_kernels;
  translate.predefined = predefined;
  // Defines named METALCALL_* also configure the prelude (METALCALL_SGM_TF32): the translation
  // sets them ahead of it. (The source itself was preprocessed with every define.)
  for (const auto& define : options.defines)
    if (define.first.rfind("METALCALL_", 0) == 0) translate.defines.push_back(define);
  if (options.poison_threadgroup) translate.defines.emplace_back("METALCALL_POISON_THREADGROUP", "1");
  if (!unit.preprocessed.empty()) translate.preprocessed = &unit.preprocessed;
  unit.translation = options.target == Target::cuda ? translate_for_cuda(source, translate)
                                                    : translate_for_cpu(source, translate);
  return unit;
}

SourceReflection reflect_source(const std::string& source, const Macros& defines, const Preprocessor& preprocessor,
                                int metal_version) {
  std::string preprocessed;
  if (needs_preprocessing(source, defines)) {
    if (!preprocessor) throw DeviceError("this source needs the C preprocessor, and none was given");
    // The language version as translate() takes it (320 -> "3.2"), for the same predefined macros.
    const std::string language = std::to_string(metal_version / 100) + "." + std::to_string(metal_version / 10 % 10);
    const PreprocessorInput input = text_for_preprocessor(source);
    std::string output;
    try {
      output = preprocessor(input.text, predefined_macros(defines, language));
    } catch (const CompileError& e) {
      rethrow_preprocessor_error(e, source);
    }
    preprocessed = finish_preprocessed(output, input, source);
  }
  std::vector<Token> tokens = preprocessed.empty() ? tokenize(source) : tokenize(preprocessed, true);
  check_nesting(tokens, source);
  drop_render_functions(tokens);
  drop_coherent_qualifiers(tokens);
  ParsedSource parsed = parse_source(tokens, source);
  SourceReflection reflection;
  const std::vector<bool> atomic64 = kernels_reaching(tokens, parsed.kernels, [](const std::string& name) {
    return name == "atomic_min_explicit" || name == "atomic_max_explicit";  // atomic_ulong's alone
  });
  for (std::size_t k = 0; k < parsed.kernels.size(); ++k)
    if (atomic64[k]) reflection.atomic64_kernels.push_back(parsed.kernels[k].info.name);
  for (ParsedKernel& kernel : parsed.kernels) {
    // Unchecked calls verify that these buffers hold the whole grid (core/kernel.cpp), as on the CPU.
    for (const std::string& name : grid_indexed_buffers(tokens, kernel))
      for (ParamInfo& param : kernel.info.params) param.grid_indexed = param.grid_indexed || param.name == name;
    reflection.kernels.push_back(std::move(kernel.info));
  }
  reflection.function_constants = std::move(parsed.function_constants);
  return reflection;
}

}  // namespace metalcall::msl
