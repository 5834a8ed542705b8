// The Translator: its state and the steps of its token walk, shared by the files that
// define them: translator.cpp (the walk itself and what it writes), translator_checked.cpp
// (checked mode's rewrites and threadgroup checks) and translator_declarations.cpp (what a
// declaration or an operator is: pointers, address spaces, divisions). Private to translate/.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "msl/translate/translator.hpp"
#include "msl/analysis/grid_indexing.hpp"
#include "msl/passes/designated_initializers.hpp"
#include "msl/passes/guarded_shuffles.hpp"
#include "msl/passes/render_functions.hpp"
#include "msl/analysis/source_analysis.hpp"
#include "msl/analysis/sync_reachability.hpp"
#include "msl/checked/checked_addresses.hpp"
#include "msl/checked/checked_mode.hpp"
#include "msl/checked/checked_stored_pointers.hpp"
#include "msl/checked/checked_thread_params.hpp"
#include "msl/errors/diagnostics.hpp"
#include "msl/lex/lexer.hpp"
#include "msl/passes/library_calls.hpp"
#include "msl/passes/loop_strips.hpp"
#include "msl/lex/token_text.hpp"
#include "msl/parse/signature_parser.hpp"
#include "msl/parse/type_names.hpp"
#include "msl/passes/accumulator_elements.hpp"
#include "msl/passes/address_space_overloads.hpp"
#include "msl/passes/this_address_space.hpp"
#include "msl/passes/vector_size_parameters.hpp"
#include "msl/passes/coherent_qualifiers.hpp"
#include "msl/passes/async_copies.hpp"
#include "msl/passes/barrier_regions.hpp"
#include "msl/passes/branch_reconvergence.hpp"
#include "msl/passes/conditional_literals.hpp"
#include "msl/passes/lambda_captures.hpp"
#include "msl/passes/literal_casts.hpp"
#include "msl/passes/product_nests.hpp"
#include "msl/passes/range_designators.hpp"
#include "msl/passes/simd_frames.hpp"
#include "msl/passes/simd_latches.hpp"
#include "msl/passes/simd_loop_exits.hpp"
#include "msl/passes/simd_line_order.hpp"
#include "msl/passes/simd_reconvergence.hpp"
#include "msl/passes/switch_fall_through.hpp"
#include "msl/passes/struct_temporaries.hpp"
#include "msl/targets/cpu_abi.hpp"
#include "msl/targets/entry_points.hpp"
#include "msl/targets/target.hpp"

namespace metalcall::msl {

class Translator {
 public:
  Translator(const std::string& source, const TranslateOptions& options, const Target& target)
      : target_(target),
        src_(source),
        t_(options.preprocessed ? tokenize(*options.preprocessed, true) : tokenize(source)),
        defines_(options.defines),
        predefined_(options.predefined),
        constants_(options.constants),
        checked_(options.checked),
        only_kernels_(options.only_kernels),
        uses_double_(std::any_of(t_.begin(), t_.end(), [](const Token& t) { return t.is_identifier("double"); })) {
    drop_render_functions(t_);
    int_vector_size_parameters(t_);
    drop_coherent_qualifiers(t_);
    if (checked_) spell_template_pointer_spaces(t_);  // `T*`: a checked pointer, as `thread T*`
    rename_names_that_clash_with_target();
    positional_designated_initializers(t_);
    hoist_guarded_shuffles(t_);
    hoist_conditional_shuffles(t_);
    qualify_library_calls(t_, target_.ambiguous_library_calls());
    if (target_.forms_barrier_regions() && barrier_regions_on()) t_ = form_barrier_regions(t_, src_, target_);
    if (target_.strip_mines_loops() && loops_checked()) t_ = strip_mine_loops(t_, target_.strips_innermost_loops_only());
  }

  Translation run();

 private:
  /**
   * False under the prelude option METALCALL_LOOP_STOP_CHECKS=0 (benchmarks/bench_stop_checks.py):
   * the loops stay as written, with neither strips nor checks.
   */
  bool loops_checked() const {
    for (const auto& [name, value] : defines_)
      if (name == "METALCALL_LOOP_STOP_CHECKS" && value == "0") return false;
    return true;
  }
  /**
   * True where the translation carries threadgroup poisoning (metal_poison.h): always on the CPU,
   * each launch switching it; elsewhere under METALCALL_POISON_THREADGROUP=1 (FrontEndOptions).
   */
  bool poisons_threadgroup() const {
    if (target_.poisons_threadgroup_per_launch()) return true;
    for (const auto& [name, value] : defines_)
      if (name == "METALCALL_POISON_THREADGROUP" && value == "1") return true;
    return false;
  }
  /** False under the prelude option METALCALL_BARRIER_REGIONS=0: barrier kernels keep the fibers. */
  bool barrier_regions_on() const {
    for (const auto& [name, value] : defines_)
      if (name == "METALCALL_BARRIER_REGIONS" && value == "0") return false;
    return true;
  }
  /** Whether kernel `i` gets an entry point (TranslateOptions::only_kernels). */
  bool emits_kernel(std::size_t i) const;
  /** The bodies (`{` … `}`) of the kernels left out that nothing else names: written as `;`. */
  std::vector<std::pair<std::size_t, std::size_t>> dropped_kernel_bodies() const;

  const Target& target_;    // what differs between CPU and CUDA
  const std::string& src_;  // the user's source: line texts for messages
  std::vector<Token> t_;    // its tokens (of the preprocessed text, with the user's line numbers)
  const std::vector<std::pair<std::string, std::string>>& defines_;
  const std::vector<std::pair<std::string, std::string>>& predefined_;  // Apple's, after the prelude
  const ConstantValues& constants_;
  bool checked_;
  const std::vector<std::string>& only_kernels_;  // empty: all
  bool uses_double_;  // the source names `double` (a CPU/CUDA extension): literals stay double
  std::vector<ParsedKernel> kernels_;
  std::vector<std::size_t> kernel_keywords_;
  std::vector<FunctionConstantDecl> function_constants_;
  std::vector<KernelScope> kernel_scopes_;
  std::vector<bool> uses_fibers_;  // per kernel
  std::map<std::size_t, std::string> struct_accessors_;  // closing brace → swizzle-named member accessors
  std::set<std::string> swizzle_functions_;              // functions named like swizzles (swizzle_named_functions)
  std::set<std::size_t> qualified_pointers_;  // the '*' of kernels' buffer parameters (see kernel_pointer_qualifier)
  std::set<std::size_t> dropped_restricts_;  // writable_restricts, on targets that qualify pointers
  // Checked mode: private arrays and struct array members, by their first token.
  std::map<std::size_t, CheckedArray> checked_arrays_;
  // Checked mode: the tokens of their initializers to write with one more brace level.
  std::set<std::size_t> checked_braces_;
  std::map<std::size_t, std::string> checked_commas_;  // `float a[4], b[4];`: `,` → `; `
  std::set<std::size_t> checked_wrap_ends_;  // a string initializer's last token: `}` after it
  // Checked mode: the source's function templates (`f<device float*>(p)` passes a checked pointer).
  std::set<std::string> function_templates_;
  // Checked mode: text before tokens (`thread_arg(` … `)` around arguments, checked_thread_params.hpp).
  std::map<std::size_t, std::string> checked_before_;
  // The CPU's rank of a call among one line's SIMD-group calls, its last argument: written last
  // before the call's `)`, after what closes a rewrite of its arguments (simd_line_order.hpp).
  std::map<std::size_t, std::string> call_places_;
  // Checked mode: tokens written as other text (`&t[i]` → `element_address(t, i)`, checked_addresses.hpp).
  std::map<std::size_t, std::string> checked_replace_;
  // Checked mode: `thread T (&a)[N]`, `thread T a[N]` and lambdas' `thread auto* p` parameters: first token → (last token, their text).
  std::map<std::size_t, std::pair<std::size_t, std::string>> array_references_;
  // Checked mode: `&param` of a kernel's reference parameter, by the '&'.
  std::map<std::size_t, std::string> checked_addresses_;
  // Casts to pointer types and the pointer variables they initialise: first token → (last token,
  // text) (translator_pointer_casts.cpp; not in checked mode, whose pointers check themselves).
  std::map<std::size_t, std::pair<std::size_t, std::string>> pointer_casts_;
  // Buffer parameters cast to a wider vector as they are: (kernel body, name) → the alignment
  // the call must check (raises ParamInfo::element_align).
  std::map<std::pair<std::size_t, std::string>, std::size_t> cast_alignments_;
  SpaceOverloads space_overloads_;            // functions overloaded only by address space
  std::map<std::size_t, std::map<std::size_t, std::string>> range_designators_;  // by `{`: for targets without them
  std::set<std::size_t> conditional_literals_;  // `c ? h : 0`: integer literal branches, for CUDA
  ConditionalArms conditional_arms_;            // `c ? h : f`: branches cast to MSL's type, for CUDA
  std::map<std::size_t, std::string> active_edits_;  // those of range_designators_ applied (inside functions)
  // The tokens literal_cast_edits replaced (CUDA: `half` -> `metal::mtl_rt::literal_cast<mtl_half>::from`):
  // one name for another, which a conversion's wrap may enclose (`long(half(v))`).
  std::set<std::size_t> literal_cast_tokens_;
  // CUDA: text after a branch body's `{` and before its `}` (branch_reconvergence.hpp).
  std::map<std::size_t, std::string> text_after_, text_before_;
  // The checks after a threadgroup declaration's `;`: the variables it declares, and every
  // threadgroup variable in scope there (those of enclosing blocks declared before, then its own).
  struct ThreadgroupChecks {
    std::vector<std::size_t> declared, in_scope;
  };
  std::map<std::size_t, ThreadgroupChecks> threadgroup_checks_;
  // Threadgroup variables declared in function bodies so far: name token, innermost `{`.
  std::vector<std::pair<std::size_t, std::size_t>> threadgroup_vars_;
  std::ostringstream out_;
  std::vector<bool> scopes_;  // open braces: true for namespaces (program-scope constant data)
  SourceMap map_;
  int line_ = 1, column_ = 1;
  int last_user_end_ = 0;  // user column just past the last emitted token on this line

  // The user's names that the target's compiler declares too (Target::clashes_with_target),
  // renamed in the tokens so that every step writes the new spelling. A name the prelude declares
  // stays (its log1p(half) must meet MLX's own log1p overloads).
  void rename_names_that_clash_with_target();

  // CUDA: rejoins before SIMD-group functions and loop exits kept in their iteration, where no
  // other rewrite replaced the tokens (translator_simd_lanes.cpp).
  void add_simd_lane_edits();
  // CUDA: conditions whose lanes rejoin before the SIMD-group code they choose, after every other
  // edit (their wraps opened and closed around them), where `untouched` says no rewrite replaced a token.
  void join_simd_conditions(const std::function<bool(std::size_t, std::size_t)>& untouched);
  // Whether an earlier rewrite owns token i (replaces it, or writes text around it): a later
  // rewrite that would edit i leaves its construct as it is.
  bool rewritten(std::size_t i) const {
    return active_edits_.count(i) || text_before_.count(i) || text_after_.count(i) || conditional_literals_.count(i) ||
           conditional_arms_.before.count(i) || conditional_arms_.colons.count(i) || range_designators_.count(i);
  }

  // Fills pointer_casts_, leaving alone the tokens another rewrite `touched`.
  void find_pointer_casts(const std::function<bool(std::size_t)>& touched);
  // CUDA: casts of an address to pointers of 1- or 2-byte items read memory (see the .cpp).
  void launder_punned_addresses();
  // CPU: every lambda without captures gets one nothing reads, so none converts to a function
  // pointer (lambda_captures.hpp).
  void block_lambda_conversions();
  // CPU: conversions from a floating type to a 32- or 64-bit integer take their argument through
  // metal_conversion.h's int_arg (NaN 0, saturated), where no other rewrite replaced or skips
  // the tokens (passes/conversion_sites.hpp; translator_conversions.cpp).
  void wrap_float_to_int_conversions(const std::function<bool(std::size_t, std::size_t)>& untouched);
  // The alignment of the vector that the cast [first, star] gives when its operand (at `operand`)
  // is a kernel's buffer parameter that the kernel never changes, recorded in cast_alignments_;
  // else 0.
  std::size_t aligned_parameter_cast(std::size_t first, std::size_t star, std::size_t operand);

  // Checked mode: what the token walk rewrites (checked_mode.hpp, checked_thread_params.hpp,
  // checked_addresses.hpp).
  void analyse_for_checked_mode();

  [[noreturn]] void fail(std::size_t i, const std::string& message) const { throw error_at(src_, t_[i], message); }

  // The top-level '*' of every kernel's buffer parameters to read-only memory (`const device
  // T*`, `constant T*`; a template's once for all its instantiations), unless the user qualified
  // it already or the kernel passes the pointer to a reference-to-pointer parameter.
  std::set<std::size_t> buffer_pointer_tokens() const;
  // The user's restrict qualifiers of kernel parameters to memory the kernel may write: the
  // CUDA translation leaves them out. NVVM (NVRTC 12.9 and 13) miscompiles kernels with a
  // restrict pointer they write through: a local vector initialised by a constant, written
  // through v[i] and then copied lost the write (`float4 r = float4(0.0f); r[1] = a; return r;`
  // read .y as 0; conformance/test_generated_msl_types.py's gt_resize on the H200).
  std::set<std::size_t> writable_restricts() const;

  // True at namespace scope (not inside a function, class or initializer).
  bool at_namespace_scope() const;

  bool opens_namespace(std::size_t i) const { return msl::opens_namespace(t_, i); }

  bool after_member_access(std::size_t i) const;

  // Writes `text` where token `tok` stood in the user's source.
  void emit(const std::string& text, const Token& tok, bool separate);

  std::size_t skip_attribute(std::size_t i) const;

  std::string rename_in_directive(const std::string& text) const;

  void emit_directive(std::size_t i);
  void new_output_line();  // ends the output line: the next token says its line again

  const FunctionConstantDecl* constant_at(std::size_t token, bool attribute) const;

  void emit_user_code();

  // An integer-capable `/`, `%`, `/=` or `%=` (not `operator/`, not a swizzle's
  // compound assignment, whose proxy divides safely itself).
  bool is_division(std::size_t i) const;

  // metal_division.h: the tag shares the operator's precedence, so operands are unchanged.
  // A compound assignment to a name declared as a bit-field (which no reference binds) takes
  // C++'s own operator and a widened divisor.
  static std::string guarded_division(const std::string& op, bool bit_field);

  // A pointer parameter of an overload by address space, or a variable passed to one
  // (address_space_overloads.cpp); returns false for any other token. Moves i past
  // what it wrote.
  bool emit_space_overload(std::size_t& i);

  static bool is_address_space(const Token& t);

  // If the tokens from i are `[const] device|constant|threadgroup [const] TYPE [const] *`,
  // the index of the '*'; else npos.
  std::size_t address_space_pointer_end(std::size_t i) const;

  // `coherent(device)` / `coherent(system)` at j (MSL 3.2; dropped: one memory here).
  bool coherent_at(std::size_t j) const;

  // True when the address space of the pointer type [i, star] is `thread`.
  bool thread_pointer(std::size_t i, std::size_t star) const;

  // `* [const] name =` or `* [const] name;`: a variable, not a parameter or a cast.
  // (Checked mode checks `thread` pointer variables, and parameters as
  // is_checked_thread_parameter says, and casts: is_pointer_cast.)
  bool declares_variable(std::size_t star) const;
  // `using P = thread T*;` (also an alias template's, and a class's member alias): the pointer
  // type [i, star] is all of an alias's target.
  bool names_alias(std::size_t i, std::size_t star) const;

  // `thread T* name(…)`, not constexpr (a checked pointer is no literal type): a function
  // returning a thread pointer (MLX's `thread elem_type* elems()`), so that its callers keep
  // the bounds of what it returns.
  bool returns_pointer(std::size_t i, std::size_t star) const;

  // `* [const] & name` then `=`, `;`, `,` or `)`: a reference to a pointer (`thread float* &r = q;`,
  // a parameter `thread float*& p`), which must bind to the checked pointer it names.
  bool declares_pointer_reference(std::size_t star) const;

  // The pointee type of tokens [i, star): address spaces dropped, const kept.
  std::string element_text(std::size_t i, std::size_t star) const;

  // Checked mode: `threadgroup T name[N][M];` → `static thread_local metal::mtl_checked_array<…> name;`
  // (the target's threadgroup storage qualifier).
  // Returns the index of the last token consumed, or npos to fall back; with `write`
  // false only says which. A `volatile` before `threadgroup` goes to the element type.
  std::size_t emit_checked_array(std::size_t i, bool write = true);

  // After a threadgroup declaration (metal_sync.h): METAL_THREADGROUP_FITS(name) for each
  // variable it declares (one over Apple GPUs' 32 KiB makes the call an ExecutionError), at
  // the name's column so that it lines up with the declaration; then
  // METAL_THREADGROUP_TOTAL_FITS with every threadgroup variable in scope: Metal adds them (and
  // a call's [[threadgroup(i)]] lengths) up against the same 32 KiB.
  void emit_threadgroup_checks(const ThreadgroupChecks& checks);

  // The `{` of every block around token i, innermost first.
  std::vector<std::size_t> enclosing_braces(std::size_t i) const;

  // Records the threadgroup variables the declaration at i (ending at `semicolon`) declares
  // and the checks its `;` gets (threadgroup_checks_): each of them, and their sum with those
  // declared before in enclosing blocks. Variables of blocks closed before are not counted.
  void note_threadgroup_variables(std::size_t i, std::size_t semicolon, const std::vector<std::size_t>& names);

  // True when the innermost brace around token i opens a function's body or a block in one
  // (where a statement may go): not a namespace's, a class's or an enum's.
  bool in_function_body(std::size_t i) const;

  // The variables the threadgroup declaration at i declares (`threadgroup float a[64], b = 0;`:
  // a and b), checked after its `;` (threadgroup_checks_).
  void check_threadgroup_sizes(std::size_t i);

  // Writes a found array as `metal::mtl_checked_array<T, N, Kind> name`; returns the
  // index of the last token consumed (the `;` or `=` follows).
  std::size_t emit_checked_local_array(const CheckedArray& d);

  // True when the `threadgroup` at i starts a variable declaration, not a
  // pointer or reference type: no '*' or '&' before the declared name.
  // `threadgroup float s[32] = {0};` on a target without initializers of group memory (CUDA's
  // __shared__): the initializer is left out.
  void drop_initializer(std::size_t i);

  bool declares_storage(std::size_t i) const;

  std::string translate_number(const Token& tok) const;
};

}  // namespace metalcall::msl
