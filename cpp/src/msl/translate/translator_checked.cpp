// The Translator's checked-mode steps: what the analysis of checked_mode.hpp and its
// neighbours finds, and the bounds checks the walk writes for private and threadgroup arrays.
#include "msl/translate/translator_walk.hpp"

#include "metalcall/errors.hpp"
#include "msl/checked/checked_array_pointers.hpp"
#include "msl/checked/checked_unions.hpp"

namespace metalcall::msl {

void Translator::analyse_for_checked_mode() {
  const RefusedPointer stored = refused_stored_pointer(t_);
  if (stored.at != std::string::npos) fail(stored.at, stored.message);
  checked_arrays_ = find_checked_arrays(t_);
  for (auto& [first, array] : checked_arrays_) {
    if (!array.refused.empty()) fail(array.name, array.refused);
    if (array.pointer_star)  // an array of checked pointers
      array.element = std::string(array.const_pointer ? "const " : "") + "metal::mtl_checked<" +
                      element_text(array.begin, array.pointer_star) + ">";
    checked_braces_.insert(array.doubled_braces.begin(), array.doubled_braces.end());
    checked_commas_.insert(array.split_commas.begin(), array.split_commas.end());
    if (array.wrap_last) {
      checked_braces_.insert(array.wrap_first);
      checked_wrap_ends_.insert(array.wrap_last);
    }
  }
  checked_addresses_ = find_checked_addresses(t_, kernels_);
  function_templates_ = function_template_names(t_);
  DeducedArguments deduced = deduced_thread_arguments(t_);
  checked_before_ = std::move(deduced.before);
  std::set<std::size_t> handled;
  for (const auto& [amp, text] : checked_addresses_) handled.insert(amp);
  // Texts before one token nest: an address's `)` closes before a thread_arg's, an
  // array_arg( opens inside one, a lambda's `auto p = …;` comes before a statement's own.
  AddressRewrites addresses = find_address_rewrites(t_, handled, function_templates_);
  for (const auto& [at, text] : addresses.before) checked_before_[at] = text + checked_before_[at];
  checked_replace_ = std::move(addresses.replace);
  std::set<std::string> array_names;
  for (const auto& [first, array] : checked_arrays_) array_names.insert(t_[array.name].text);
  for (const auto& [at, text] : array_arguments(t_, std::move(array_names), conditional_int_literals(t_))) checked_before_[at] += text;
  for (const auto& [at, text] : pointer_specialization_twins(t_)) checked_replace_[at] = text;
  const ArrayPointerRewrites row_pointer_variables = array_pointer_rewrites(t_);
  if (row_pointer_variables.refused_at != std::string::npos) fail(row_pointer_variables.refused_at, row_pointer_variables.refused);
  for (const auto& [at, text] : row_pointer_variables.replace) checked_replace_[at] = text;
  for (const auto& [at, text] : union_member_checks(t_)) checked_before_[at] += text;
  array_references_ = array_reference_parameters(t_);
  DeducedArrayReferences deduced_arrays = deduced_array_references(t_);
  array_references_.insert(deduced_arrays.params.begin(), deduced_arrays.params.end());
  for (const auto& [at, text] : deduced_arrays.before) checked_before_[at] += text;
  for (const auto& [at, text] : deduced_arrays.calls)  // around array_arg(…): first the ')'s inside
    checked_before_[at] = text.rfind("metal::", 0) == 0 ? text + checked_before_[at] : checked_before_[at] + text;
  DeducedRowPointers row_pointers = deduced_row_pointers(t_);
  array_references_.insert(row_pointers.params.begin(), row_pointers.params.end());
  for (const auto& [at, text] : row_pointers.calls)  // as deduced_arrays.calls
    checked_before_[at] = text.rfind("metal::", 0) == 0 ? text + checked_before_[at] : checked_before_[at] + text;
  const auto array_pointers = array_pointer_parameters(t_);
  array_references_.insert(array_pointers.begin(), array_pointers.end());
  AutoPointerParameters autos = auto_pointer_parameters(t_);
  array_references_.insert(autos.params.begin(), autos.params.end());
  for (const auto& [at, text] : autos.before) checked_before_[at] = text + checked_before_[at];
}

std::size_t Translator::emit_checked_array(std::size_t i, bool write) {
  const bool is_volatile = i > 0 && t_[i - 1].is_identifier("volatile");
  std::size_t name = i + 1;
  while (name + 1 < t_.size() && !t_[name + 1].is("[") && !t_[name + 1].is(";")) ++name;
  if (name + 1 >= t_.size() || !t_[name + 1].is("[") || t_[name].kind != TokenKind::identifier) return std::string::npos;
  std::vector<std::size_t> type_tokens;
  for (std::size_t j = i + 1; j < name; ++j) type_tokens.push_back(j);
  // `threadgroup float a[64], b[64];`: one declaration each.
  std::string text;
  std::vector<std::size_t> names;
  while (true) {
    std::size_t j = name + 1;
    const std::vector<std::string> extents = array_extents(t_, j);
    if (j >= t_.size() || extents.empty() || !(t_[j].is(";") || t_[j].is(","))) return std::string::npos;
    std::string type = (is_volatile ? "volatile " : "") + type_text(t_, type_tokens, false);
    for (auto it = extents.rbegin(); it != extents.rend(); ++it)
      type = "metal::mtl_checked_array<" + type + ", (" + *it + ")>";
    text += std::string(target_.threadgroup_storage()) + " " + type + " " + t_[name].text + ";";
    names.push_back(name);
    if (t_[j].is(";")) {
      if (write) {
        emit(text, t_[i], true);
        if (target_.checks_threadgroup_sizes() && in_function_body(i)) {
          note_threadgroup_variables(i, j, names);
          if (auto checks = threadgroup_checks_.find(j); checks != threadgroup_checks_.end())
            emit_threadgroup_checks(checks->second);
        }
      }
      return j;
    }
    name = j + 1;  // the next declarator: an array too, or the statement stays as it is
    if (name + 1 >= t_.size() || t_[name].kind != TokenKind::identifier || !t_[name + 1].is("["))
      return std::string::npos;
    text += " ";
  }
}

void Translator::emit_threadgroup_checks(const ThreadgroupChecks& checks) {
  for (std::size_t n : checks.declared) emit("METAL_THREADGROUP_FITS(" + t_[n].text + ");", t_[n], true);
  // Undefined at each group's start, as on Metal: 0xFF bytes until the group writes them (metal_poison.h).
  if (poisons_threadgroup())
    for (std::size_t n : checks.declared) emit("METAL_THREADGROUP_POISON(" + t_[n].text + ");", t_[n], true);
  std::string list, sum;
  for (std::size_t n : checks.in_scope) {
    list += (list.empty() ? "" : ", ") + t_[n].text;
    sum += (sum.empty() ? "sizeof(" : " + sizeof(") + t_[n].text + ")";
  }
  emit("METAL_THREADGROUP_TOTAL_FITS(\"" + list + "\", " + sum + ", " + (checks.in_scope.size() > 1 ? "true" : "false") +
           ");",
       t_[checks.in_scope.back()], true);
}

std::vector<std::size_t> Translator::enclosing_braces(std::size_t i) const {
  std::vector<std::size_t> out;
  int depth = 0;
  for (std::size_t j = i; j-- > 0;) {
    if (t_[j].is("}")) ++depth;
    else if (t_[j].is("{") && depth > 0) --depth;
    else if (t_[j].is("{")) out.push_back(j);
  }
  return out;
}

void Translator::note_threadgroup_variables(std::size_t i, std::size_t semicolon, const std::vector<std::size_t>& names) {
  const std::vector<std::size_t> chain = enclosing_braces(i);
  if (chain.empty() || names.empty()) return;
  ThreadgroupChecks& checks = threadgroup_checks_[semicolon];
  checks.declared = names;
  for (const auto& [name, brace] : threadgroup_vars_)
    if (std::find(chain.begin(), chain.end(), brace) != chain.end()) checks.in_scope.push_back(name);
  for (std::size_t n : names) {
    threadgroup_vars_.push_back({n, chain.front()});
    checks.in_scope.push_back(n);
  }
}

bool Translator::in_function_body(std::size_t i) const {
  int depth = 0;
  for (std::size_t j = i; j-- > 0;) {
    if (t_[j].is("}")) {
      ++depth;
      continue;
    }
    if (!t_[j].is("{")) continue;
    if (depth > 0) {
      --depth;
      continue;
    }
    for (std::size_t k = j; k-- > 0;) {  // the head before that brace
      const Token& h = t_[k];
      if (h.is(";") || h.is("{") || h.is("}")) return in_function_body(j);  // a bare block: as around it
      if (h.is(")") || h.is_identifier("else") || h.is_identifier("do")) return true;
      if (h.is_identifier("struct") || h.is_identifier("class") || h.is_identifier("union") ||
          h.is_identifier("namespace") || h.is_identifier("enum") || h.is_identifier("extern"))
        return false;
    }
    return false;
  }
  return false;  // namespace scope
}

void Translator::check_threadgroup_sizes(std::size_t i) {
  if (!target_.checks_threadgroup_sizes() || !in_function_body(i)) return;
  std::vector<std::size_t> names;
  int depth = 0;
  bool in_initializer = false;
  for (std::size_t j = i + 1; j < t_.size(); ++j) {
    const Token& k = t_[j];
    if (k.is("(") || k.is("[") || k.is("{") || k.is("<")) ++depth;
    else if (k.is(")") || k.is("]") || k.is("}") || k.is(">")) --depth;
    else if (k.is(">>")) depth -= 2;
    if (depth < 0) return;
    if (depth != 0) continue;
    if (k.is("=")) in_initializer = true;
    else if (k.is(",")) in_initializer = false;
    else if (k.is(";")) {
      note_threadgroup_variables(i, j, names);
      return;
    } else if (!in_initializer && k.kind == TokenKind::identifier && j + 1 < t_.size() &&
               (t_[j + 1].is("[") || t_[j + 1].is(";") || t_[j + 1].is("=") || t_[j + 1].is(",") || t_[j + 1].is("{"))) {
      names.push_back(j);
    }
  }
}

std::size_t Translator::emit_checked_local_array(const CheckedArray& d) {
  std::string type = !d.element.empty() ? d.element : (d.const_element ? "const " : "") + type_text(t_, d.type, false);
  for (auto it = d.extents.rbegin(); it != d.extents.rend(); ++it)
    type = "metal::mtl_checked_array<" + type + ", (" + *it + "), " + std::to_string(d.kind) + ">";
  emit(type + " " + d.qualifier + t_[d.name].text, t_[d.begin], true);
  return d.end - 1;
}

void Translator::drop_initializer(std::size_t i) {
  const auto [first, last] = declaration_initializer(t_, i);
  for (std::size_t k = first; k < last; ++k) active_edits_[k] = "";
}

bool Translator::declares_storage(std::size_t i) const {
  // Inside a parameter list (an unmatched '(' since the statement began): a parameter,
  // also an array one (`constant const int64_t strides[3]`, MLX's spelling).
  int open = 0;
  for (std::size_t j = i; j-- > 0;) {
    const Token& t = t_[j];
    if (t.is(")")) ++open;
    else if (t.is("(")) {
      if (open == 0) return false;
      --open;
    } else if (t.is(";") || t.is("{") || t.is("}")) {
      break;
    }
  }
  int depth = 0;
  for (std::size_t j = i + 1; j < t_.size(); ++j) {
    const Token& t = t_[j];
    // `threadgroup float (*r)[4]`, `(&t)[4]`: a pointer or reference declarator names no storage.
    if (depth == 0 && t.is("(") && j + 1 < t_.size() && (t_[j + 1].is("*") || t_[j + 1].is("&") || t_[j + 1].is("&&")))
      return false;
    if (t.is("<") || t.is("(")) ++depth;
    else if (t.is(">") || t.is(")")) {
      if (--depth < 0) return false;  // a parameter list ended: a parameter
    } else if (t.is(">>")) depth -= 2;
    else if (depth == 0 && (t.is("*") || t.is("&"))) return false;
    else if (depth == 0 && (t.is(";") || t.is("=") || t.is(",") || t.is("["))) return true;
  }
  return false;
}

}  // namespace metalcall::msl
