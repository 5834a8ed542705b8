// What the backends that translate MSL (CPU, CUDA) share about a compiled library:
// its kernels, one compiled module per set of function-constant values, and the
// parameter sizes and indices read back from the compiled layout table.
#pragma once

#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/backend.hpp"
#include "metalcall/errors.hpp"
#include "msl/function_constants.hpp"
#include "msl/signature_parser.hpp"
#include "msl/translator.hpp"

namespace metalcall::msl {

template <class Module>
class TranslatedLibrary : public BackendLibrary {
 public:
  /** `module` is the build without constants; `base_error` why there is none, if there is none. */
  TranslatedLibrary(std::string source, std::string preprocessed, CompileOptions options, Translation base,
                    std::shared_ptr<Module> module, std::exception_ptr base_error)
      : source_(std::move(source)), preprocessed_(std::move(preprocessed)), options_(std::move(options)),
        base_(std::move(base)), base_error_(base_error) {
    if (module) modules_.emplace("", std::move(module));
  }

  std::vector<std::string> function_names() const override {
    std::vector<std::string> names;
    for (const auto& k : base_.kernels) names.push_back(k.info.name);
    return names;
  }

 protected:
  /** The kernel called `name`; ArgumentError listing the library's kernels if none. */
  const TranslatedKernel& kernel(const std::string& name) const {
    for (const auto& k : base_.kernels)
      if (k.info.name == name) return k;
    std::string names;
    for (const auto& k : base_.kernels) names += (names.empty() ? "" : ", ") + k.info.name;
    throw ArgumentError("no kernel named '" + name + "' in this library; it has: " + (names.empty() ? "(none)" : names));
  }

  /** The module built with these constant values, built on first use. */
  std::shared_ptr<Module> module_for(const std::vector<FunctionConstant>& constants) {
    const ConstantValues values = resolve_constants(base_.function_constants, constants);
    std::string key;
    for (const auto& [index, literal] : values) key += std::to_string(index) + "=" + literal + ";";
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = modules_.find(key);
    if (it != modules_.end()) return it->second;
    if (key.empty() && base_error_) std::rethrow_exception(base_error_);
    TranslateOptions translate;
    translate.constants = values;
    if (!preprocessed_.empty()) translate.preprocessed = &preprocessed_;
    auto module = build(translate);
    modules_.emplace(key, module);
    return module;
  }

  /** Translates and compiles one specialisation (the options carry constants and preprocessed text). */
  virtual std::shared_ptr<Module> build(TranslateOptions& translate) = 0;

  const std::string& source() const { return source_; }
  const CompileOptions& options() const { return options_; }

 private:
  std::string source_;
  std::string preprocessed_;  // empty when the source needed no preprocessor
  CompileOptions options_;
  Translation base_;               // kernels and constants (all undefined)
  std::exception_ptr base_error_;  // why the unspecialised source did not build, if it did not
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Module>> modules_;  // by constant values
};

/**
 * Fills the element sizes and alignments from a compiled layout table (one entry per
 * parameter: size, align, binding), and the indices only the compiler could evaluate.
 */
template <class Layout>
void apply_layout(KernelInfo& info, const Layout* layout) {
  bool deferred = false;
  for (std::size_t i = 0; i < info.params.size(); ++i) {
    ParamInfo& p = info.params[i];
    p.element_size = layout[i].size;
    p.element_align = layout[i].align;
    if (p.binding != kDeferredBinding) continue;
    if (layout[i].binding < 0 || layout[i].binding > 1 << 20) {
      throw CompileError("source.metal:" + std::to_string(p.line) + ": error: the index of '" + p.name + "' is " +
                             std::to_string(layout[i].binding) + "; buffer indices are small non-negative integers",
                         "", p.line, p.column);
    }
    p.binding = static_cast<int>(layout[i].binding);
    deferred = true;
  }
  if (deferred) finalize_bindings(info);
}

}  // namespace metalcall::msl
