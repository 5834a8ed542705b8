// Conversions from a floating type to int, uint, long and ulong through the prelude, for the
// CPU (translator_walk.hpp, wrap_float_to_int_conversions; metal_conversion.h).
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "msl/parse/type_names.hpp"
#include "msl/passes/conversion_sites.hpp"
#include "msl/translate/translator_walk.hpp"

namespace metalcall::msl {

namespace {

// int, uint, long, ulong and the other names of 32- and 64-bit integers the front end knows
// (`unsigned int`, `long long`: their last word).
bool is_wide_int_type_name(const std::string& s) {
  static const auto& names = *new std::set<std::string>{"int",     "uint",     "long",    "ulong",    "unsigned",
                                                   "signed",  "int32_t",  "uint32_t", "int64_t", "uint64_t",
                                                   "size_t",  "ptrdiff_t", "intptr_t", "uintptr_t"};
  return names.count(s) > 0;
}

// The last word of a type's words: `int` of `unsigned int`.
std::string last_word(const std::string& type) { return type.substr(type.rfind(' ') + 1); }

// The compound assignments whose result may be floating (`k += f`); the others take integers.
bool may_be_floating(const Token& op) { return op.is("+=") || op.is("-=") || op.is("*=") || op.is("/="); }

// A floating literal: `2.5f`, `1e10`, `.5h` (not `0x1e`).
bool floating_literal(const Token& k) {
  if (k.kind != TokenKind::number) return false;
  const bool hex = k.text.size() > 1 && k.text[0] == '0' && (k.text[1] == 'x' || k.text[1] == 'X');
  return k.text.find('.') != std::string::npos || (!hex && k.text.find_first_of("eE") != std::string::npos) ||
         (hex && k.text.find_first_of("pP") != std::string::npos);
}

// An integer literal of type long or unsigned long (`4ul`, `-3l`, `0x10LL`).
bool long_integer_literal(const Token& k) {
  return k.kind == TokenKind::number && !floating_literal(k) && k.text.find_first_of("lL") != std::string::npos;
}

}  // namespace

void Translator::wrap_float_to_int_conversions(const std::function<bool(std::size_t, std::size_t)>& untouched) {
  // Ranges another rewrite writes whole from their first token ([first, last]): a wrap opens and
  // closes outside them.
  std::vector<std::pair<std::size_t, std::size_t>> whole;
  for (const auto& [first, cast] : pointer_casts_) whole.emplace_back(first, cast.first);
  for (const auto& [first, ref] : array_references_) whole.emplace_back(first, ref.first);
  for (const auto& [first, array] : checked_arrays_) whole.emplace_back(first, std::max(array.after, array.end));
  const auto inside = [&whole](std::size_t i) {
    for (const auto& [first, last] : whole)
      if (first < i && i <= last) return true;
    return false;
  };
  const auto spelled = [](const std::string& type) { return is_renamed_type(type) ? renamed_type(type) : type; };
  using Form = ConversionSite::Form;
  // An integer literal converts as written; a floating one to int, uint, long or ulong (`int k =
  // 1e10f;`, `k *= 2.5f`) as a run-time value would (clang folds an out-of-range one to poison).
  // Types named by a template parameter or an alias of the source's own count (`static_cast<U>(x)`
  // for U = int): int_arg passes a U that is no 32- or 64-bit integer, and int_ref an object of
  // another type, on untouched.
  for (const auto& s : conversion_sites(t_, is_wide_int_type_name, true)) {
    // Nor a value naming a bit-field member: int_arg takes a reference, which none binds.
    // A floating literal to a template parameter or alias stays as written: CUDA's literal_cast
    // rewrites `static_cast<U>(1.0f)` whole (literal_casts.hpp), and MLX's are in range.
    // But a long literal to a template parameter or alias goes through int_arg: for a half T,
    // CUDA's __half has no operator= for a long (`v = 4ul;` with `T v`, fuzz seed 28507 #644).
    const bool to_own_type = s.form != Form::compound && !is_wide_int_type_name(last_word(s.type));
    if (s.bit_field || (s.literal && !(to_own_type && long_integer_literal(t_[s.end - 1])) &&
                        (!floating_literal(t_[s.end - 1]) || to_own_type)))
      continue;
    if (s.form == Form::compound) {
      // `k += f` as `int_ref(k) += f`: k + f converted by int_arg. Not a swizzle of several
      // components (a proxy: the vector's operator converts) nor a bit-field (no reference).
      if (s.several_components || !may_be_floating(t_[s.target_end])) continue;
      if (!untouched(s.target_first, s.target_end) || inside(s.target_first) || inside(s.target_end)) continue;
      text_before_[s.target_first] += "metal::mtl_rt::int_ref(";
      text_before_[s.target_end] = ")" + text_before_[s.target_end];
      continue;
    }
    // `w.xy = f`: the proxy converts through the vector's constructor (metal_vector.h's convert_impl).
    if (s.type.empty() || (s.form == Form::assignment && s.several_components)) continue;
    if (!untouched(s.first - 1, s.end) || inside(s.first) || inside(s.end)) continue;
    text_before_[s.first] += "metal::mtl_rt::int_arg<" + spelled(s.type) + ">(";
    text_before_[s.end] = ")" + text_before_[s.end];
  }
}

}  // namespace metalcall::msl
