// A library of translated MSL as the CPU and CUDA backends hold it, and the one
// compile sequence they share: preprocess → translate → build, with the build
// error deferred to the first specialisation when the source has function
// constants (array sizes or static_asserts may need their values). Each kernel
// specialised with function-constant values gets a module of its own that holds only
// that kernel (module_for), as Metal specialises one function. A translation that built is kept on
// disk (translation_cache.hpp): a new process compiling the same source skips the
// front end.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "backends/translated/constant_literals.hpp"
#include "backends/translated/translation_cache.hpp"
#include "core/backend.hpp"
#include "core/interrupt.hpp"
#include "metalcall/errors.hpp"
#include "msl/translate/front_end.hpp"
#include "msl/parse/function_constants.hpp"
#include "msl/parse/signature_parser.hpp"

namespace metalcall::translated {

template <class Module>
class TranslatedLibrary final : public BackendLibrary {
 public:
  /** Builds the module of one translation; throws CompileError mapped to `source`. */
  using Build = std::function<std::shared_ptr<Module>(const msl::Translation& translation, const std::string& source)>;
  /** Makes the program of one kernel of a built module. */
  using Load = std::function<std::shared_ptr<Program>(const msl::TranslatedKernel& kernel,
                                                      const std::shared_ptr<Module>& module)>;

  /** Compiles `source`; throws CompileError (or DeviceError when no compiler can run). */
  static std::shared_ptr<TranslatedLibrary> compile(const std::string& source, msl::FrontEndOptions front, Build build,
                                                    Load load) {
    const auto begin = std::chrono::steady_clock::now();
    const TranslationCache cache(source, front);
    const auto keyed = std::chrono::steady_clock::now();
    if (auto cached = cache.load()) {
      msl::TranslatedUnit unit;
      unit.translation = std::move(*cached);
      try {
        auto module = build(unit.translation, source);
        return std::shared_ptr<TranslatedLibrary>(new TranslatedLibrary(
            source, std::move(front), std::move(unit), std::move(module), nullptr, std::move(build), std::move(load)));
      } catch (const CompileError&) {
        // It built before (another compiler now?). The error needs the source map,
        // which is not cached: translate again below and report from there.
      }
    }
    const auto start = std::chrono::steady_clock::now();
    front.stop = &interrupt_requested;  // Ctrl-C during a long front end (core/interrupt.hpp)
    msl::TranslatedUnit unit = msl::translate(source, front);
    const auto translated = std::chrono::steady_clock::now();
    std::shared_ptr<Module> module;
    std::exception_ptr base_error;
    auto built = translated;
    try {
      module = build(unit.translation, source);
      built = std::chrono::steady_clock::now();
      cache.save(unit.translation);  // only translations that built: a hit then rarely builds at all
    } catch (const CompileError&) {
      if (unit.translation.function_constants.empty()) throw;
      base_error = std::current_exception();
    }
    if (std::getenv("METALCALL_COMPILE_TIMES")) {
      // Where a cold compile's time goes (benchmarks/bench_compile.py reads this line): the
      // translation cache's key and lookup, the front end, the backend's build, the cache's write.
      const auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
      std::fprintf(stderr, "metalcall compile times: key %.2f ms, lookup %.2f ms, translate %.2f ms, build %.2f ms, "
                   "save %.2f ms\n", ms(keyed - begin), ms(start - keyed), ms(translated - start), ms(built - translated),
                   ms(std::chrono::steady_clock::now() - built));
    }
    return std::shared_ptr<TranslatedLibrary>(new TranslatedLibrary(source, std::move(front), std::move(unit),
                                                                    std::move(module), base_error, std::move(build),
                                                                    std::move(load)));
  }

  std::vector<std::string> function_names() const override {
    std::vector<std::string> names;
    for (const auto& k : unit_.translation.kernels) names.push_back(k.info.name);
    return names;
  }

  std::shared_ptr<Program> make_program(const std::string& name,
                                        const std::vector<FunctionConstant>& constants) override {
    for (const auto& k : unit_.translation.kernels) {
      if (k.info.name != name) continue;
      std::shared_ptr<Module> module = module_for(name, constants);  // checks the constants first
      // Parameters a false [[function_constant]] leaves out of this specialisation.
      msl::TranslatedKernel specialised = k;
      msl::enable_params(specialised.info, unit_.translation.function_constants, constants);
      return load_(specialised, module);
    }
    throw ArgumentError("no kernel named '" + name + "' in this library");  // core checks names first
  }

 private:
  TranslatedLibrary(std::string source, msl::FrontEndOptions front, msl::TranslatedUnit unit,
                    std::shared_ptr<Module> module, std::exception_ptr base_error, Build build, Load load)
      : source_(std::move(source)), front_(std::move(front)), unit_(std::move(unit)), base_error_(base_error),
        build_(std::move(build)), load_(std::move(load)) {
    if (module) modules_.emplace("", std::move(module));
  }

  /**
   * The module for kernel `name` with these constant values, built on first use. With
   * no values it is the whole file's module built by compile(). With values it holds
   * only that kernel's entry point and what it uses (TranslateOptions::only_kernels), as
   * Metal specialises one function: a new specialisation of one kernel of a large file
   * costs about what that kernel costs alone. A whole-file module already built with the
   * same values serves every kernel; and if the kernel's own module fails to build (the
   * front end left out something it needed), the whole file is built with those values.
   */
  std::shared_ptr<Module> module_for(const std::string& name, const std::vector<FunctionConstant>& constants) {
    const msl::ConstantValues values = constant_literals(unit_.translation.function_constants, constants);
    std::string key;
    for (const auto& [index, literal] : values) key += std::to_string(index) + "=" + literal + ";";
    std::lock_guard<std::mutex> lock(mutex_);
    auto whole = modules_.find(key);
    if (whole != modules_.end()) return whole->second;
    if (key.empty() && base_error_) std::rethrow_exception(base_error_);
    const std::string kernel_key = key + "|" + name;  // which kernel the module holds
    auto it = kernel_modules_.find(kernel_key);
    if (it != kernel_modules_.end()) return it->second;
    msl::FrontEndOptions specialised = front_;
    specialised.constants = values;
    const std::string* preprocessed = unit_.preprocessed.empty() ? nullptr : &unit_.preprocessed;
    std::shared_ptr<Module> module;
    try {
      specialised.only_kernels = {name};
      const msl::TranslatedUnit unit = msl::translate(source_, specialised, preprocessed);
      module = build_(unit.translation, source_);
    } catch (const CompileError&) {
      const std::exception_ptr kernel_error = std::current_exception();
      try {
        specialised.only_kernels.clear();
        const msl::TranslatedUnit unit = msl::translate(source_, specialised, preprocessed);
        module = build_(unit.translation, source_);
      } catch (const CompileError&) {
        std::rethrow_exception(kernel_error);  // this kernel's error, not another's
      }
      modules_.emplace(key, module);
      return module;
    }
    kernel_modules_.emplace(kernel_key, module);
    return module;
  }

  std::string source_;
  msl::FrontEndOptions front_;
  msl::TranslatedUnit unit_;       // the translation without constants: kernels and declared constants
  std::exception_ptr base_error_;  // why the unspecialised source did not build, if it did not
  Build build_;
  Load load_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Module>> modules_;  // whole-file modules, by constant values
  std::map<std::string, std::shared_ptr<Module>> kernel_modules_;  // one kernel's, by values and name
};

/**
 * Whether the element type the front end read off a parameter's spelling (its scalar and width)
 * has the size the compiler gave it, as a float4 is 16 bytes and a packed_float3 12. The spelling
 * is read without C++'s scopes (an alias, a member typedef), so a name can mislead it.
 */
inline bool element_type_fits(const ParamInfo& p) {
  std::size_t s = 0;
  switch (p.scalar) {
    case ScalarType::unknown: return true;
    case ScalarType::boolean: case ScalarType::i8: case ScalarType::u8: s = 1; break;
    case ScalarType::i16: case ScalarType::u16: case ScalarType::f16: case ScalarType::bf16: s = 2; break;
    case ScalarType::i32: case ScalarType::u32: case ScalarType::f32: s = 4; break;
    default: s = 8; break;
  }
  const std::size_t w = static_cast<std::size_t>(p.vector_width);
  return p.element_size == s * w || (w == 3 && p.element_size == s * 4);  // packed or padded 3-vectors
}

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
    // A type the compiler sized otherwise is not what the spelling said: unknown, as a struct's,
    // so that no number is packed at the wrong size and no array is checked against it.
    const bool element = p.kind == ParamKind::buffer || p.kind == ParamKind::reference || p.kind == ParamKind::value;
    if (element && p.element_size && !element_type_fits(p)) {
      p.scalar = ScalarType::unknown;
      p.vector_width = 1;
    }
    if (p.binding != msl::kDeferredBinding) continue;
    if (layout[i].binding < 0 || layout[i].binding > 1 << 20) {
      throw CompileError(std::string(msl::kSourceName) + ":" + std::to_string(p.line) + ": error: the index of '" +
                             p.name + "' is " + std::to_string(layout[i].binding) +
                             "; buffer indices are small non-negative integers",
                         "", p.line, p.column);
    }
    p.binding = static_cast<int>(layout[i].binding);
    deferred = true;
  }
  if (deferred) msl::finalize_bindings(info);
}

}  // namespace metalcall::translated
