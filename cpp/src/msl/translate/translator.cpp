// The MSL translator: one Translator walks the user's tokens (renames, swizzles,
// address spaces, function constants, checked mode) for every target, then asks a
// Target (target_cpu.cpp, target_cuda.cpp) for what differs (the SourceMap: source_map.cpp).
// The Translator's state is in translator_walk.hpp; its checked-mode steps and its questions
// about declarations are in translator_checked.cpp and translator_declarations.cpp.
#include "msl/translate/translator.hpp"
#include "msl/translate/translator_walk.hpp"

#include <algorithm>
#include <cctype>
#include <memory>
#include <set>
#include <sstream>

#include "metalcall/errors.hpp"
#include "msl/analysis/coarsening.hpp"
#include "msl/analysis/reserved_names.hpp"
#include "msl/errors/front_end_stop.hpp"
#include "msl/lex/half_literals.hpp"
#include "msl/analysis/stdlib_names.hpp"
#include "msl/passes/loop_stops.hpp"
#include "msl/passes/small_negations.hpp"

namespace metalcall::msl {

namespace {

// Identifiers that the translated backends (CPU, CUDA) do not support yet: a clear
// error at the user's line beats a confusing one from the target's compiler.
const char* unsupported_reason(const std::string& id) {
  static const std::pair<const char*, const char*> kPrefixes[] = {
      {"imageblock", "imageblocks"},
  };
  for (const auto& [prefix, what] : kPrefixes)
    if (id.rfind(prefix, 0) == 0) return what;
  return nullptr;
}

}  // namespace

void Translator::rename_names_that_clash_with_target() {
  // Reserved names the source declares (naga's `__local_invocation_id`): any host macro could take them.
  const std::set<std::string> reserved = declared_reserved_variables(t_);
  // A name the prelude declares (MSL's sin, MLX's log1p overloads beside the prelude's) stays; one
  // it only spells (its calls of CUDA's fmaxf, a member named y0) is the user's own.
  const auto prelude_declares = [](const std::string& id) { return stdlib_names().count(id) || prelude_functions().count(id); };
  for (Token& tok : t_)
    if (tok.kind == TokenKind::identifier &&
        (reserved.count(tok.text) || (target_.clashes_with_target(tok.text) && !prelude_declares(tok.text))))
      tok.text = user_name_in_target(tok.text);
}

Translation Translator::run() {
  ParsedSource parsed = parse_source(t_, src_);
  // Reflection names what the user wrote, whatever the target's spelling.
  for (auto& k : parsed.kernels) {
    k.info.name = user_spelling(k.info.name);
    for (auto& p : k.info.params) {
      p.name = user_spelling(p.name);
      p.type_name = user_spelling(p.type_name);
    }
  }
  for (auto& c : parsed.function_constants) {
    c.name = user_spelling(c.name);
    c.type_name = user_spelling(c.type_name);
  }
  kernels_ = std::move(parsed.kernels);
  kernel_keywords_ = std::move(parsed.kernel_keywords);
  function_constants_ = std::move(parsed.function_constants);
  struct_accessors_ = swizzle_member_accessors(t_);
  swizzle_functions_ = swizzle_named_functions(t_);
  uses_fibers_ = fiber_kernels(t_, kernels_);
  kernel_scopes_ = kernel_scopes(t_, kernels_);
  if (*target_.kernel_pointer_qualifier()) {
    qualified_pointers_ = buffer_pointer_tokens();
    dropped_restricts_ = writable_restricts();
  }
  if (checked_) analyse_for_checked_mode();
  space_overloads_ = address_space_overloads(t_, src_);
  for (const auto& [open, tag] : space_overloads_.tags) text_after_[open] = tag + text_after_[open];
  for (const auto& [range, open] : space_overloads_.wraps) {
    text_before_[range.first] += open;  // closed before the argument's `,` or `)`: outside whatever wraps its
    text_before_[range.second + 1] = ")" + text_before_[range.second + 1];  // last token (`&a`: a name's emission)
  }
  if (!target_.takes_range_designators()) range_designators_ = range_designator_rewrites(t_);
  if (target_.wraps_conditional_int_literals()) conditional_literals_ = conditional_int_literals(t_);
  if (target_.rejoins_barrier_branches()) {
    for (const auto& [open, close] : barrier_branch_bodies(t_)) {
      const std::string lanes = "mtl_lanes_" + std::to_string(open);
      text_after_[open] = " const unsigned " + lanes + " = metal::mtl_rt::branch_lanes();";
      text_before_[close] = " metal::mtl_rt::rejoin(" + lanes + "); ";
    }
  }
  if (target_.casts_conditional_arms()) conditional_arms_ = conditional_arms(t_);
  if (target_.wraps_conditional_literals()) {
    for (const auto& [index, text] : literal_cast_edits(t_, [](const std::string& n) {
           return is_renamed_type(n) ? renamed_type(n) : n;
         })) {
      active_edits_[index] = text;
      literal_cast_tokens_.insert(index);
    }
    const auto spelled = [](const std::string& n) { return is_renamed_type(n) ? renamed_type(n) : n; };
    for (const auto& init : constexpr_initializers(t_, spelled)) {
      text_before_[init.begin] += "metal::mtl_rt::literal_cast<" + init.type + ">::from((";
      text_before_[init.end] = "))" + text_before_[init.end];
    }
  }

  // Loop nests first, against the other rewrites only; their edits then replace the
  // accumulator elements' inside them.
  std::map<std::size_t, std::string> nests;
  if (target_.hands_over_loop_nests() && !checked_)
    nests = product_nest_edits(t_, [this](std::size_t i) { return rewritten(i); });
  if (target_.pairs_accumulator_elements())
    for (const auto& [index, text] : accumulator_element_edits(t_)) active_edits_[index] = text;
  for (const auto& [index, text] : nests) active_edits_[index] = text;
  // The casts of a copy handed to mtl_async_copy stay plain: it checks their alignment itself.
  std::set<std::size_t> async_copy_tokens;
  if (target_.hands_over_async_copies())
    for (const auto& [index, text] : async_copy_edits(t_)) {
      active_edits_[index] = text;
      if (text == "metal::mtl_rt::mtl_async_copy(")
        for (std::size_t j = index; j < t_.size() && !t_[j].is(";"); ++j) async_copy_tokens.insert(j);
    }
  // CUDA: SIMD-group functions act on the lanes MSL says (translator_simd_lanes.cpp).
  if (target_.rejoins_barrier_branches()) add_simd_lane_edits();
  // Struct temporaries assigned whole go through a named copy (CUDA, struct_temporaries.hpp).
  if (target_.rejoins_barrier_branches() && !checked_) {
    const StructAssignments whole = struct_temporary_assignments(t_, [this](std::size_t i) { return rewritten(i); });
    for (const auto& [index, text] : whole.before) text_before_[index] += text;
    for (const auto& [index, text] : whole.replace) active_edits_[index] = text;
    for (const auto& [index, text] : whole.before_end) text_before_[index] = text + text_before_[index];
  }
  // The CPU's SIMD-group rendezvous at the end of each iteration of loops that may call one,
  // and the calls' lines that order the rendezvous inside functions of the source.
  if (target_.latches_simd_loops()) {
    const SimdCallers callers(t_, is_simd_call_name);
    const LatchEdits latches = simd_latch_edits(t_, callers);
    for (const auto& [index, text] : latches.before) text_before_[index] += text;
    for (const auto& [index, text] : latches.after) text_after_[index] += text;
    // Frames for the functions reaching a threadgroup barrier too: its site is ordered as theirs.
    const SimdCallers rendezvous(t_, [](const std::string& id) {
      return is_simd_call_name(id) || id == "threadgroup_barrier";
    });
    const FrameEdits frames = simd_frame_edits(t_, rendezvous);
    for (const auto& [index, text] : frames.before) text_before_[index] += text;
    for (const auto& [index, text] : frames.after) text_after_[index] += text;
    // Several such calls on one line: each its rank there (simd_line_order.hpp).
    for (const auto& [close, text] : simd_line_order_edits(t_, frames.framed, frames.framed_functors))
      if (!active_edits_.count(close)) call_places_[close] = text;
  }
  // Last: a stop check on every loop the other rewrites left as written (loop_stops.hpp).
  if (loops_checked())
    for (const auto& [index, text] : loop_stop_edits(t_, [this](std::size_t i) { return active_edits_.count(i) > 0; }))
      text_before_[index] = text + text_before_[index];

  if (target_.launders_punned_addresses()) launder_punned_addresses();
  if (target_.blocks_lambda_conversions()) block_lambda_conversions();
  if (!checked_)
    find_pointer_casts([&](std::size_t i) {
      return active_edits_.count(i) || async_copy_tokens.count(i) || text_after_.count(i) || conditional_literals_.count(i) ||
             conditional_arms_.before.count(i) || conditional_arms_.colons.count(i) || range_designators_.count(i) ||
             space_overloads_.params.count(i) || space_overloads_.args.count(i) || qualified_pointers_.count(i);
    });
  // Where no other rewrite replaced a token of [first, last].
  const auto untouched = [this](std::size_t first, std::size_t last) {
    auto edited = active_edits_.lower_bound(first);
    return edited == active_edits_.end() || edited->first > last;
  };
  // Likewise, but for literal_cast edits: one name for another, which a wrap may enclose.
  const auto untouched_but_names = [this](std::size_t first, std::size_t last) {
    for (auto e = active_edits_.lower_bound(first); e != active_edits_.end() && e->first <= last; ++e)
      if (!literal_cast_tokens_.count(e->first)) return false;
    return true;
  };
  // Checked mode too: a kernel's values are the same with and without its bounds checks.
  if (target_.conditions_float_to_int()) {
    // A literal_cast edit replaces a name by a name: the wrap encloses it (CUDA's `long(half(v))`,
    // whose NaN gave LLONG_MIN while the site was skipped).
    wrap_float_to_int_conversions(untouched_but_names);
  }
  if (target_.wraps_small_negations() && !checked_) {
    // Conversions to char and short, explicit and implicit, take their argument through the
    // prelude (CUDA), first: a negation that starts the argument opens inside it.
    // A `half(x)` inside (literal_cast, fuzz seed 28205 #539) is no reason to leave one unwrapped.
    for (const auto& w : narrowing_wraps(t_))
      if (untouched(w.first - 1, w.first - 1) && untouched_but_names(w.first, w.end)) {
        text_before_[w.first] += w.prefix;
        text_before_[w.end] = ")" + text_before_[w.end];
      }
    // Unary minus through the prelude.
    for (const auto& [minus, end] : small_negations(t_))
      if (untouched(minus, end)) {
        const std::string open = "(metal::mtl_rt::neg_tag{} ";
        if (auto arm = conditional_arms_.before.find(minus); arm != conditional_arms_.before.end())
          arm->second += open;  // the branch's macro opens first
        else
          text_before_[minus] += open;
        text_before_[end] = ")" + text_before_[end];
      }
    // `0 - x` as `0 + (neg_tag{} - x)`.
    for (const auto& [minus, end] : zero_subtractions(t_))
      if (untouched(minus, end)) {
        text_before_[minus] += "+ (metal::mtl_rt::neg_tag{} ";
        text_before_[end] = ")" + text_before_[end];
      }
  }

  // CUDA: after the wraps above, which may hold a condition or lie inside it.
  if (target_.rejoins_barrier_branches()) join_simd_conditions(untouched_but_names);

  out_ << "// Generated by metalcall from MSL; do not edit.\n";
  // The prelude's options (METALCALL_SGM_TF32, METALCALL_SGM_PAIR_PRODUCTS) come before it.
  for (const auto& [name, value] : defines_) out_ << "#define " << name << " " << value << "\n";
  // No thread_elements(): SIMD-group matrices are never handed out to the lanes.
  if (std::none_of(t_.begin(), t_.end(), [](const Token& t) { return t.is_identifier("thread_elements"); }))
    out_ << "#define METALCALL_SGM_ELEMENTS 0\n";
  // No [[threadgroup(i)]] parameter: the threadgroup size checks need no run-time part.
  bool threadgroup_params = false;
  for (std::size_t k = 0; k + 1 < t_.size() && !threadgroup_params; ++k)
    threadgroup_params = t_[k].is_identifier("threadgroup") && t_[k + 1].is("(");
  if (!threadgroup_params) out_ << "#define METALCALL_THREADGROUP_PARAMS 0\n";
  target_.emit_preamble(out_);
  for (const auto& [name, value] : predefined_) out_ << "#define " << name << " " << value << "\n";
  for (const auto& c : function_constants_) {
    auto v = constants_.find(c.index);
    const bool defined = v != constants_.end();
    const std::string type = type_text(t_, c.type_tokens, true);  // a vector's value: its components (ConstantValues)
    out_ << "#define METALCALL_FC_" << c.index << " "
         << (!defined ? "(" + type + "())" : c.vector_width > 1 ? "(" + type + "(" + v->second + "))" : v->second) << "\n"
         << "#define METALCALL_FC_DEFINED_" << c.index << " " << (defined ? "true" : "false") << "\n";
  }
  out_ << "#line 1 \"" << kSourceName << "\"\n";
  line_ = 1;
  column_ = 1;
  emit_user_code();
  out_ << "\n";
  Translation result;
  // No loop anywhere in the source: a kernel's run is bounded by its code (MSL has no goto or recursion).
  const bool loop_free = std::none_of(t_.begin(), t_.end(), [](const Token& k) {
    return k.is_identifier("for") || k.is_identifier("while") || k.is_identifier("do");
  });
  // The source's part of the proof that a kernel's threads may run several in a row on one CUDA
  // thread (entry_points.hpp, coarsenable; analysis/coarsening.hpp).
  const std::vector<bool> straight_line = target_.emits_coarsened_entries()
                                              ? straight_line_kernels(t_, kernels_, loop_free)
                                              : std::vector<bool>(kernels_.size(), false);
  // Texture atomics are member functions without _explicit (MSL's other atomics have it).
  const std::vector<bool> texture_atomics = kernels_reaching(t_, kernels_, [](const std::string& name) {
    const bool fetch = name.rfind("atomic_fetch_", 0) == 0 && name.find("_explicit") == std::string::npos;
    return fetch || name == "atomic_load" || name == "atomic_store" || name == "atomic_exchange" ||
           name == "atomic_compare_exchange_weak";
  });
  for (std::size_t i = 0; i < kernels_.size(); ++i) {
    poll_front_end_stop();
    if (!emits_kernel(i)) continue;  // a per-kernel translation (TranslateOptions::only_kernels)
    // Named after the kernel's name in the user's source, where diagnostics report
    // an error in this generated code (an instantiation with an undeclared type).
    const Token& name = t_[kernels_[i].name_token];
    out_ << "#line 1 \"" << entry_point_file_name(name.line, name.column) << "\"\n";
    const bool regions = target_.forms_barrier_regions() && runs_in_regions(t_, kernels_[i]);
    out_ << kernel_scopes_[i].opens;
    emit_entry_point(out_, t_, kernels_[i], i, kernel_scopes_[i].call_name, uses_fibers_[i] && !regions, checked_,
                     target_, straight_line[i], regions, poisons_threadgroup());
    out_ << kernel_scopes_[i].closes << "\n";
    TranslatedKernel tk;
    tk.info = kernels_[i].info;
    // Unchecked calls verify that these buffers hold the whole grid (core/kernel.cpp).
    for (const std::string& name : grid_indexed_buffers(t_, kernels_[i])) {
      for (auto& p : tk.info.params) p.grid_indexed = p.grid_indexed || p.name == user_spelling(name);
    }
    for (auto& p : tk.info.params)
      if (auto a = cast_alignments_.find({kernels_[i].body_open, p.name}); a != cast_alignments_.end())
        p.element_align = std::max(p.element_align, a->second);
    tk.entry_symbol = cpu_entry_symbol(i);
    tk.layout_symbol = cpu_layout_symbol(i);
    tk.uses_fibers = uses_fibers_[i] && !regions;
    tk.runs_regions = regions;
    tk.info.loop_free = loop_free;
    tk.info.texture_atomics = texture_atomics[i];
    result.kernels.push_back(std::move(tk));
  }
  for (const auto& c : function_constants_) result.function_constants.push_back({c.name, c.index, c.scalar, c.type_name, c.vector_width});
  result.code = out_.str();
  result.map = std::move(map_);
  return result;
}

bool Translator::at_namespace_scope() const {
  for (bool ns : scopes_)
    if (!ns) return false;
  return true;
}

bool Translator::after_member_access(std::size_t i) const {
  return i > 0 && (t_[i - 1].is(".") || (t_[i - 1].is("->") && !is_trailing_return_arrow(t_, i - 1)));
}

void Translator::emit(const std::string& text, const Token& tok, bool separate) {
  if (tok.line < line_) {
    // Preprocessed text can step back (a macro spread over lines): say where we are.
    out_ << "\n#line " << tok.line << " \"" << kSourceName << "\"\n";
    line_ = tok.line;
    column_ = 1;
    last_user_end_ = 0;
  }
  while (line_ < tok.line) {
    out_ << '\n';
    ++line_;
    column_ = 1;
    last_user_end_ = 0;
  }
  if (column_ < tok.column) {
    out_ << std::string(tok.column - column_, ' ');
    column_ = tok.column;
  } else if (column_ > 1 && (separate || tok.column > last_user_end_)) {
    out_ << ' ';
    ++column_;
  }
  map_.add(line_, column_, tok.column);
  out_ << text;
  for (char c : text) {
    if (c == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
  }
  last_user_end_ = tok.column + static_cast<int>(tok.text.size());
}

std::size_t Translator::skip_attribute(std::size_t i) const {
  int depth = 0;
  for (std::size_t j = i; j < t_.size(); ++j) {
    if (t_[j].is("[")) ++depth;
    else if (t_[j].is("]") && --depth == 0) return j + 1;
  }
  return t_.size();
}

const FunctionConstantDecl* Translator::constant_at(std::size_t token, bool attribute) const {
  for (const auto& c : function_constants_)
    if ((attribute ? c.attribute_token : c.constant_token) == token) return &c;
  return nullptr;
}

void Translator::emit_user_code() {
  const std::vector<std::size_t>& kernel_keywords = kernel_keywords_;
  std::vector<std::pair<std::size_t, std::size_t>> skipped;  // template instantiation declarations
  for (const auto& k : kernels_)
    if (k.instantiation) skipped.emplace_back(k.declaration_begin, k.declaration_end);
  for (const auto& range : space_qualified_duplicates(t_, src_)) skipped.push_back(range);
  for (const auto& range : space_overloads_.skip) skipped.push_back(range);
  const std::vector<std::pair<std::size_t, std::size_t>> dropped_bodies = dropped_kernel_bodies();
  // A compound division of a bit-field divides by a widened value, not through a reference.
  const std::set<std::string> bit_fields = target_.guards_division() ? bit_field_names(t_) : std::set<std::string>{};
  std::vector<int> swz;
  for (std::size_t i = 0; i < t_.size(); ++i) {
    poll_front_end_stop();
    const Token& tok = t_[i];
    bool skip = false;
    for (const auto& [b, e] : dropped_bodies)
      if (i == b) {
        emit(";", tok, true);  // declared, never defined: a kernel this module does not hold
        i = e;
        skip = true;
      }
    for (const auto& [b, e] : skipped)
      if (i == b) {
        i = e;  // the entry point instantiates it
        skip = true;
      }
    if (skip) continue;
    if (auto before = text_before_.find(i); before != text_before_.end()) emit(before->second, tok, true);
    // A conditional's branch opens outside whatever checked mode or an edit writes for its first token.
    auto arms = conditional_arms_.before.find(i);
    if (auto dropped = active_edits_.find(i);
        arms != conditional_arms_.before.end() && !(dropped != active_edits_.end() && dropped->second.empty()))
      emit(arms->second, tok, true);
    if (auto before = checked_before_.find(i); before != checked_before_.end()) emit(before->second, tok, true);
    if (auto place = call_places_.find(i); place != call_places_.end()) emit(place->second, tok, true);
    if (auto replaced = checked_replace_.find(i); replaced != checked_replace_.end()) {
      if (!replaced->second.empty()) emit(replaced->second, tok, true);
      if (auto after = text_after_.find(i); after != text_after_.end()) emit(after->second, tok, true);  // a wrap's `)`
      continue;
    }
    // A local array's GNU range designator becomes a loop (not at namespace scope: no statements there).
    auto range = range_designators_.find(i);
    if (range != range_designators_.end() && !at_namespace_scope()) active_edits_.insert(range->second.begin(), range->second.end());
    auto edit = active_edits_.find(i);
    if (edit != active_edits_.end()) {
      if (!edit->second.empty()) emit(edit->second, tok, true);
      continue;
    }
    if (conditional_arms_.colons.count(i)) {
      emit("), (", tok, true);
      continue;
    }
    if (dropped_restricts_.count(i)) {  // writable_restricts
      emit(" ", tok, false);
      continue;
    }
    switch (tok.kind) {
      case TokenKind::directive:
        emit_directive(i);
        continue;
      case TokenKind::number:
        if (conditional_literals_.count(i)) {
          emit("metal::mtl_rt::int_literal{" + tok.text + "}", tok, false);
          continue;
        }
        emit(translate_number(tok), tok, false);
        continue;
      case TokenKind::string:
      case TokenKind::character:
        // Checked mode: `char s[6] = "hello"` initialises a checked array as `{"hello"}`.
        emit(checked_braces_.count(i) ? "{" + tok.text : tok.text, tok, false);
        if (checked_wrap_ends_.count(i)) emit("}", tok, false);
        continue;
      case TokenKind::punct:
        if (tok.is("[") && i + 1 < t_.size() && t_[i + 1].is("[")) {
          const bool is_kernel = std::find(kernel_keywords.begin(), kernel_keywords.end(), i) != kernel_keywords.end();
          if (const FunctionConstantDecl* c = constant_at(i, true)) {
            emit("= METALCALL_FC_" + std::to_string(c->index), tok, true);
          } else if (is_kernel) {
            emit("METALCALL_KERNEL", tok, true);
          }
          i = skip_attribute(i) - 1;
          continue;
        }
        // `p.xy()` calls a member function named like a swizzle (a vector's swizzles are never
        // called), and `f.bar<3>()` a member template the source declares: left as written (a
        // CompileError, "does not provide a call operator" or "no member named 'mtl_swz'", before
        // 2026-12-05). `v.rg < w.rg` of a name the source declares no function of stays a swizzle.
        if ((tok.is(".") || tok.is("->")) && i + 1 < t_.size() && t_[i + 1].kind == TokenKind::identifier &&
            is_swizzle(t_[i + 1].text, &swz) &&
            !(i + 2 < t_.size() &&
              (t_[i + 2].is("(") || (t_[i + 2].is("<") && swizzle_functions_.count(t_[i + 1].text))))) {
          // v.xy → v.template mtl_swizzle<0,1>(); a write target (`v.xy = a`, `v.xy++`,
          // `v.zyx.xy += a`) gets the proxy.
          const bool write = swizzle_is_written(t_, i + 1);
          // Comma-free (mtl_swz<1210> for .zyx), so it survives being a macro argument.
          emit(tok.text + "template " + (write ? "mtl_swz_ref<" : "mtl_swz<") + swizzle_code(t_[i + 1].text) + ">()", tok, false);
          ++i;
          continue;
        }
        if (auto comma = checked_commas_.find(i); comma != checked_commas_.end()) {
          emit(comma->second, tok, true);
          continue;
        }
        if (checked_ && checked_addresses_.count(i)) {
          emit(checked_addresses_[i], tok, true);
          ++i;  // the parameter's name is part of it
          continue;
        }
        if (target_.guards_division() && is_division(i)) {
          // A member access (`s.bits`, `p->bits`): a local of the name is an lvalue that binds.
          const bool bit_field = i > 1 && t_[i - 1].kind == TokenKind::identifier && bit_fields.count(t_[i - 1].text) &&
                                 (t_[i - 2].is(".") || t_[i - 2].is("->"));
          emit(guarded_division(tok.text, bit_field), tok, false);
          continue;
        }
        if (qualified_pointers_.count(i)) {
          emit(tok.text + " " + target_.kernel_pointer_qualifier() + " ", tok, false);  // `*A` → `* R A`
          continue;
        }
        if (tok.is("{")) scopes_.push_back(opens_namespace(i));
        if (tok.is("}") && !scopes_.empty()) scopes_.pop_back();
        if (tok.is("}")) {
          auto accessors = struct_accessors_.find(i);
          if (accessors != struct_accessors_.end()) emit(accessors->second, tok, true);
        }
        // Checked mode: a checked array's initializer is one brace level deeper.
        emit(checked_braces_.count(i) ? tok.text + tok.text : tok.text, tok, false);
        if (auto after = text_after_.find(i); after != text_after_.end()) emit(after->second, tok, true);
        if (auto checks = threadgroup_checks_.find(i); checks != threadgroup_checks_.end())
          emit_threadgroup_checks(checks->second);
        continue;
      case TokenKind::identifier:
        break;
    }
    const std::string& id = tok.text;
    if (auto cast = pointer_casts_.find(i); cast != pointer_casts_.end()) {
      emit(cast->second.second, tok, true);
      i = cast->second.first;
      continue;
    }
    if (!after_member_access(i) && emit_space_overload(i)) continue;
    if (after_member_access(i)) {
      emit(id, tok, false);
      continue;
    }
    if (checked_ && !constant_at(i, false)) {
      // Checked mode: address-space pointers become bounds-checked pointers,
      // threadgroup arrays bounds-checked arrays.
      if (auto ref = array_references_.find(i); ref != array_references_.end()) {
        emit(ref->second.second, tok, true);
        i = ref->second.first;
        continue;
      }
      auto array = checked_arrays_.find(i);
      if (array != checked_arrays_.end()) {
        i = emit_checked_local_array(array->second);
        continue;
      }
      const std::size_t star = address_space_pointer_end(i);
      if (star != std::string::npos && !in_specialization_pattern(t_, i, star) &&
          (!thread_pointer(i, star) || declares_variable(star) || names_alias(i, star) ||
           is_checked_thread_parameter(t_, i, star) ||
           ((declares_pointer_reference(star) || returns_pointer(i, star)) &&
            element_text(i, star).find("auto") == std::string::npos) ||
           is_template_argument(t_, i, star) || is_pointer_cast(t_, i, star))) {
        // `const constant auto* p = q;`: the checked pointer's element deduced (metal_checked_addresses.h's guides).
        const std::string element = element_text(i, star);
        const bool deduced = element == "auto" || (element.size() > 5 && element.compare(element.size() - 5, 5, " auto") == 0);
        // (A space after the deduced one: `auto *p` and an `auto* p` whose `thread` the rewrite wrote
        // would run into the name.)
        emit(deduced && declares_variable(star) ? "metal::mtl_checked " : "metal::mtl_checked<" + element + ">", tok, true);
        i = star;
        // `T* __restrict__ p`: a checked pointer is a class, which restrict does not qualify.
        while (i + 1 < t_.size() && (t_[i + 1].is_identifier("__restrict__") || t_[i + 1].is_identifier("__restrict") ||
                                     t_[i + 1].is_identifier("restrict")))
          ++i;
        continue;
      }
      // `volatile threadgroup float a[N];`: the checked array's elements are volatile.
      if (id == "volatile" && i + 1 < t_.size() && t_[i + 1].is_identifier("threadgroup") &&
          declares_storage(i + 1) && emit_checked_array(i + 1, false) != std::string::npos)
        continue;
      if (id == "threadgroup" && declares_storage(i)) {
        std::size_t next = emit_checked_array(i);
        if (next != std::string::npos) {
          i = next;
          continue;
        }
      }
      // reinterpret_cast<device uint*>(p), const_cast<device float*>(p): a checked pointer
      // converts by a constructor, which neither cast calls (the front end refuses a
      // const_cast into another address space).
      if ((id == "reinterpret_cast" || id == "const_cast") && i + 2 < t_.size() && t_[i + 1].is("<") &&
          address_space_pointer_end(i + 2) != std::string::npos) {
        emit("static_cast", tok, true);
        continue;
      }
    }
    if (id == "kernel" && std::find(kernel_keywords.begin(), kernel_keywords.end(), i) != kernel_keywords.end()) {
      emit("METALCALL_KERNEL", tok, true);
    } else if (id == "vertex" || id == "fragment" || id == "mesh" || id == "object") {
      if (i + 1 < t_.size() && t_[i + 1].kind == TokenKind::identifier)
        fail(i, id + " functions are not supported: metalcall runs compute kernels");
      emit(id, tok, false);
    } else if (id == "coherent" && i + 3 < t_.size() && t_[i + 1].is("(") && t_[i + 3].is(")")) {
      // `coherent(device) device uint*` (MSL 3.2): one memory for all threads here, so
      // coherence needs no qualifier; `volatile` stays.
      i += 3;
    } else if ((id == "device" || id == "thread" || id == "threadgroup" || id == "constant") && qualifies_this(t_, i)) {
      // `float get() const device`, `T() threadgroup = default`: objects have one address space
      // here. A `constant` object is const, so its members are const ones (not constructors).
      if (id == "constant") {
        std::size_t close = i;
        bool is_const = false;
        for (std::size_t j = i + 1; j < t_.size() && t_[j].kind == TokenKind::identifier; ++j)
          is_const = is_const || t_[j].text == "const" || (t_[j].text == "constant" && j > i);
        for (; !t_[close].is(")"); --close) is_const = is_const || t_[close - 1].is_identifier("const");
        if (!is_const && !declares_constructor(t_, close)) emit("const", tok, true);
      }
    } else if (id == "device" || id == "thread") {
      // Address spaces have no meaning in host memory (nor to CUDA's generic pointers);
      // the reflection table keeps them.
    } else if (id == "constant" && constant_at(i, false)) {
      // `static constant constexpr const int x [[function_constant(0)]]` (MLX): one static, one const.
      const bool is_static = i > 0 && t_[i - 1].is_identifier("static");
      const bool has_const = (i + 1 < t_.size() && t_[i + 1].is_identifier("const")) ||
                             (i + 2 < t_.size() && t_[i + 1].is_identifier("constexpr") && t_[i + 2].is_identifier("const"));
      const bool has_constexpr = (i > 0 && t_[i - 1].is_identifier("constexpr")) ||
                                 (i + 1 < t_.size() && t_[i + 1].is_identifier("constexpr"));
      // A constant expression where program-scope data is constexpr (CUDA): data computed from a
      // function constant (`constant float g = fc * 2;`) is constant-initialised from it.
      const char* qualifier = has_constexpr ? "" : target_.constant_data_constexpr() ? "constexpr" : has_const ? "" : "const";
      const std::string text = std::string(is_static ? "" : "static ") + qualifier;
      if (!text.empty()) emit(text, tok, true);
    } else if (id == "is_function_constant_defined" && i + 3 < t_.size() && t_[i + 1].is("(") &&
               t_[i + 3].is(")")) {
      const FunctionConstantDecl* found = nullptr;
      for (const auto& c : function_constants_)
        if (c.name == user_spelling(t_[i + 2].text)) found = &c;
      if (!found) fail(i + 2, "'" + t_[i + 2].text + "' is not a function constant");
      emit("METALCALL_FC_DEFINED_" + std::to_string(found->index), tok, true);
      i += 3;
    } else if (id == "constant") {
      // `const constant`, `constant const`, `constant constexpr const` (MLX): one const.
      const bool near_const = (i > 0 && t_[i - 1].is_identifier("const")) ||
                              (i + 1 < t_.size() && t_[i + 1].is_identifier("const")) ||
                              (i + 2 < t_.size() && t_[i + 1].is_identifier("constexpr") && t_[i + 2].is_identifier("const"));
      // Program-scope constant data may live in an address space of the target's.
      // Not the definition of a class's static member (`constant constexpr const float
      // A<6>::table[8];`, MLX): CUDA allows no memory qualifier there (the class's declaration says it).
      const char* space = at_namespace_scope() && declares_storage(i) && !defines_static_member(t_, i)
                              ? target_.program_scope_data()
                              : nullptr;
      if (space) {
        // One const and one constexpr at most: the declaration may say either itself.
        const bool says_constexpr = (i > 0 && t_[i - 1].is_identifier("constexpr")) ||
                                    (i + 1 < t_.size() && t_[i + 1].is_identifier("constexpr"));
        const char* qualifier = says_constexpr ? ""
                                : target_.constant_data_constexpr() ? " constexpr"
                                : near_const ? "" : " const";
        emit(std::string(space) + qualifier, tok, true);
      } else if (!near_const) {
        emit("const", tok, true);
      }
    } else if (id == "threadgroup") {
      // Storage (`threadgroup float tmp[256];`) takes the target's qualifier; a
      // pointer to threadgroup memory is a plain pointer.
      // Not `f() threadgroup` nor `operator bool() const threadgroup` (a member for `this` there).
      const bool member_qualifier = i > 0 && (t_[i - 1].is(")") || (i > 1 && t_[i - 1].is_identifier("const") && t_[i - 2].is(")")));
      if (declares_storage(i) && !member_qualifier) {
        emit(target_.threadgroup_storage(), tok, true);
        if (!target_.takes_threadgroup_initializers()) drop_initializer(i);
        check_threadgroup_sizes(i);
      }
    } else if (id == "threadgroup_imageblock") {
      fail(i, std::string("imageblocks are not supported by the ") + target_.name() + " backend");
    } else if (const char* what = unsupported_reason(id)) {
      fail(i, "'" + id + "': " + what + " are not supported by the " + target_.name() + " backend yet");
    } else if (is_renamed_type(id)) {
      emit(renamed_type(id), tok, false);
    } else {
      emit(id, tok, false);
    }
  }
}

std::string Translator::translate_number(const Token& tok) const {
  const std::string& s = tok.text;
  const bool hex = s.size() > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  // A hexadecimal floating literal has a binary exponent (`0x1.8p-3`); its suffix follows the
  // exponent's decimal digits, so a final h or f is a suffix there, never a hex digit.
  const bool hex_floating = hex && s.find_first_of("pP") != std::string::npos;
  if ((!hex || hex_floating) && (s.back() == 'h' || s.back() == 'H')) {
    std::string v = s.substr(0, s.size() - 1);
    // The half the literal names, rounded once (a float in between would round twice).
    const std::string exact = exact_half_literal(v);
    if (!exact.empty()) return std::string(target_.half_literal()) + "(" + exact + ")";
    const bool has_point = hex_floating || v.find_first_of(".eE") != std::string::npos;
    return std::string(target_.half_literal()) + "(" + v + (has_point ? "f" : ".0f") + ")";
  }
  // MSL has no double: an unsuffixed floating literal (`0.5`, `1e-3`, `0x1p-3`) is a float, so
  // `0.5 * x` stays float and `{0.5 * x, y}` initialises a pair of floats. A source
  // that uses the double extension (metal_double.h) keeps C++'s double literals.
  const bool floating = hex ? hex_floating : s.find_first_of(".eE") != std::string::npos;
  if (floating && !uses_double_ && (std::isdigit(static_cast<unsigned char>(s.back())) || s.back() == '.'))
    return s + "f";
  return s;
}

Translation translate_for_cpu(const std::string& source, const TranslateOptions& options) {
  const auto target = make_cpu_target(options.checked);
  return Translator(source, options, *target).run();
}
Translation translate_for_cuda(const std::string& source, const TranslateOptions& options) {
  if (options.checked) throw DeviceError("[cuda] checked mode exists only on the cpu backend");
  const auto target = make_cuda_target();
  return Translator(source, options, *target).run();
}

}  // namespace metalcall::msl
