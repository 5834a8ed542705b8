// The Metal standard library's names, from the table the build read from the prelude's text
// (prelude_names_table.hpp; see stdlib_names.hpp).
#include "msl/analysis/stdlib_names.hpp"

#include <cstddef>

#include "msl/analysis/prelude_names_table.hpp"

namespace metalcall::msl {

namespace {

// Reserved names (`__x`, `_X`) are the compiler's: the prelude may use them, a kernel may not.
bool is_reserved(const std::string& id) {
  return id.size() > 1 && id[0] == '_' && (id[1] == '_' || (id[1] >= 'A' && id[1] <= 'Z'));
}

// A set of the table's sorted names: each insert lands at the end.
std::set<std::string> to_set(const char* const* names, std::size_t count) {
  std::set<std::string> out;
  for (std::size_t i = 0; i < count; ++i) out.emplace_hint(out.end(), names[i]);
  return out;
}

std::set<std::string> compute() {
  std::set<std::string> names;
  for (std::size_t i = 0; i < prelude_table::kAllCount; ++i) {
    const std::string n = prelude_table::kAll[i];
    if (!is_reserved(n)) names.emplace_hint(names.end(), n);
  }
  // Not MSL: metal_half_cuda.h's log1p(half) only resolves a source's own log1p overloads
  // (MLX's) on CUDA; a source that calls log1p without declaring it gets the rule's error.
  names.erase("log1p");
  // Implemented by the translator itself (function constants).
  names.insert("is_function_constant_defined");
  // MSL standard library functions (spec §6) that the prelude does not implement: a
  // call to one is MSL, and gets the target compiler's "not declared" instead of a
  // rule error that would call it host code.
  for (const char* n : {"simd_is_helper_thread", "get_num_samples", "get_sample_position", "discard_fragment",
                        "simdgroup_load", "simdgroup_store", "simdgroup_multiply", "simdgroup_multiply_accumulate",
                        "make_filled_simdgroup_matrix", "make_uniform"})
    names.insert(n);
  return names;
}

}  // namespace

const std::set<std::string>& stdlib_names() {
  static const auto& names = *new std::set<std::string>(compute());
  return names;
}

const std::set<std::string>& prelude_macro_names() {
  static const auto& names = *new std::set<std::string>(to_set(prelude_table::kMacros, prelude_table::kMacrosCount));
  return names;
}

const std::set<std::string>& prelude_identifiers() {
  static const auto& names =
      *new std::set<std::string>(to_set(prelude_table::kIdentifiers, prelude_table::kIdentifiersCount));
  return names;
}

const std::set<std::string>& prelude_functions() {
  static const auto& names =
      *new std::set<std::string>(to_set(prelude_table::kDeclared, prelude_table::kDeclaredCount));
  return names;
}

const std::set<std::string>& prelude_reserved_names() {
  static const auto& names = *new std::set<std::string>([] {
    std::set<std::string> reserved;
    for (std::size_t i = 0; i < prelude_table::kDeclaredCount; ++i)
      if (is_reserved(prelude_table::kDeclared[i])) reserved.emplace_hint(reserved.end(), prelude_table::kDeclared[i]);
    return reserved;
  }());
  return names;
}

}  // namespace metalcall::msl
