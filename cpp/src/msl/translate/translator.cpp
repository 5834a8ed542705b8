// The MSL translator: one Translator walks the user's tokens (renames, swizzles,
// address spaces, function constants, checked mode) for every target, then asks a
// Target (target_cpu.cpp, target_cuda.cpp) for what differs. Also the SourceMap.
// Over ~600 lines: the token walk is one state machine (scopes, templates, checked mode,
// division, address-space overloads); its helpers already live in their own files.
#include "msl/translate/translator.hpp"

#include <algorithm>
#include <cctype>
#include <memory>
#include <set>
#include <sstream>

#include "metalcall/errors.hpp"
#include "msl/checked/checked_addresses.hpp"
#include "msl/checked/checked_mode.hpp"
#include "msl/checked/checked_thread_params.hpp"
#include "msl/passes/address_space_overloads.hpp"
#include "msl/targets/cpu_abi.hpp"
#include "msl/errors/diagnostics.hpp"
#include "msl/targets/entry_points.hpp"
#include "msl/analysis/grid_indexing.hpp"
#include "msl/lex/lexer.hpp"
#include "msl/parse/signature_parser.hpp"
#include "msl/analysis/source_analysis.hpp"
#include "msl/passes/accumulator_elements.hpp"
#include "msl/passes/product_nests.hpp"
#include "msl/passes/async_copies.hpp"
#include "msl/passes/branch_reconvergence.hpp"
#include "msl/passes/conditional_literals.hpp"
#include "msl/passes/literal_casts.hpp"
#include "msl/passes/range_designators.hpp"
#include "msl/targets/target.hpp"
#include "msl/lex/token_text.hpp"
#include "msl/parse/type_names.hpp"

namespace metalcall::msl {

// ---- SourceMap ----

void SourceMap::add(int line, int out_column, int user_column) {
  auto& v = lines_[line];
  if (!v.empty() && v.back().first >= out_column) return;  // keep it sorted; first token wins
  v.emplace_back(out_column, user_column);
}

int SourceMap::user_column(int line, int out_column) const {
  auto it = lines_.find(line);
  if (it == lines_.end() || it->second.empty()) return out_column;
  const auto& v = it->second;
  auto pos = std::upper_bound(v.begin(), v.end(), std::make_pair(out_column, 1 << 30));
  if (pos == v.begin()) return v.front().second;
  --pos;
  return pos->second + (out_column - pos->first);
}

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

bool is_assignment(const Token& t) {
  static const auto& ops = *new std::set<std::string>{"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="};
  return t.kind == TokenKind::punct && ops.count(t.text);
}

class Translator {
 public:
  Translator(const std::string& source, const TranslateOptions& options, const Target& target)
      : target_(target),
        src_(source),
        t_(options.preprocessed ? tokenize(*options.preprocessed, true) : tokenize(source)),
        defines_(options.defines),
        constants_(options.constants),
        checked_(options.checked),
        uses_double_(std::any_of(t_.begin(), t_.end(), [](const Token& t) { return t.is_identifier("double"); })) {}

  Translation run() {
    ParsedSource parsed = parse_source(t_, src_);
    kernels_ = std::move(parsed.kernels);
    kernel_keywords_ = std::move(parsed.kernel_keywords);
    function_constants_ = std::move(parsed.function_constants);
    struct_accessors_ = swizzle_member_accessors(t_);
    uses_fibers_ = fiber_kernels(t_, kernels_);
    kernel_qualified_names_ = qualified_kernel_names(t_, kernels_);
    if (*target_.kernel_pointer_qualifier()) qualified_pointers_ = buffer_pointer_tokens();
    if (checked_) analyse_for_checked_mode();
    space_overloads_ = address_space_overloads(t_);
    if (!target_.takes_range_designators()) range_designators_ = range_designator_rewrites(t_);
    if (target_.wraps_conditional_int_literals()) conditional_literals_ = conditional_int_literals(t_);
    if (target_.rejoins_barrier_branches()) {
      for (const auto& [open, close] : barrier_branch_bodies(t_)) {
        const std::string lanes = "mtl_lanes_" + std::to_string(open);
        text_after_[open] = " const unsigned " + lanes + " = metal::mtl_rt::branch_lanes();";
        text_before_[close] = " metal::mtl_rt::rejoin(" + lanes + "); ";
      }
    }
    if (target_.wraps_conditional_literals()) {
      conditional_arms_ = conditional_arms(t_);
      for (const auto& [index, text] : literal_cast_edits(t_, [](const std::string& n) {
             return is_renamed_type(n) ? renamed_type(n) : n;
           }))
        active_edits_[index] = text;
    }

    // Loop nests first, against the other rewrites only; their edits then replace the
    // accumulator elements' inside them.
    std::map<std::size_t, std::string> nests;
    if (target_.hands_over_loop_nests() && !checked_)
      nests = product_nest_edits(t_, [this](std::size_t i) {
        return active_edits_.count(i) || text_before_.count(i) || text_after_.count(i) ||
               conditional_literals_.count(i) || conditional_arms_.before.count(i) ||
               conditional_arms_.colons.count(i) || range_designators_.count(i);
      });
    if (target_.pairs_accumulator_elements())
      for (const auto& [index, text] : accumulator_element_edits(t_)) active_edits_[index] = text;
    for (const auto& [index, text] : nests) active_edits_[index] = text;
    if (target_.hands_over_async_copies())
      for (const auto& [index, text] : async_copy_edits(t_)) active_edits_[index] = text;

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
    for (const auto& c : function_constants_) {
      auto v = constants_.find(c.index);
      const bool defined = v != constants_.end();
      out_ << "#define METALCALL_FC_" << c.index << " "
           << (defined ? v->second : "(" + type_text(t_, c.type_tokens, true) + "())") << "\n"
           << "#define METALCALL_FC_DEFINED_" << c.index << " " << (defined ? "true" : "false") << "\n";
    }
    out_ << "#line 1 \"" << kSourceName << "\"\n";
    line_ = 1;
    column_ = 1;
    emit_user_code();
    out_ << "\n";
    Translation result;
    for (std::size_t i = 0; i < kernels_.size(); ++i) {
      // Named after the kernel's name in the user's source, where diagnostics report
      // an error in this generated code (an instantiation with an undeclared type).
      const Token& name = t_[kernels_[i].name_token];
      out_ << "#line 1 \"" << entry_point_file_name(name.line, name.column) << "\"\n";
      emit_entry_point(out_, t_, kernels_[i], i, kernel_qualified_names_[i], uses_fibers_[i], checked_, target_);
      TranslatedKernel tk;
      tk.info = kernels_[i].info;
      // Unchecked calls verify that these buffers hold the whole grid (core/kernel.cpp).
      for (const std::string& name : grid_indexed_buffers(t_, kernels_[i])) {
        for (auto& p : tk.info.params) p.grid_indexed = p.grid_indexed || p.name == name;
      }
      tk.entry_symbol = cpu_entry_symbol(i);
      tk.layout_symbol = cpu_layout_symbol(i);
      tk.uses_fibers = uses_fibers_[i];
      result.kernels.push_back(std::move(tk));
    }
    for (const auto& c : function_constants_) result.function_constants.push_back({c.name, c.index, c.scalar, c.type_name});
    result.code = out_.str();
    result.map = std::move(map_);
    return result;
  }

 private:
  const Target& target_;    // what differs between CPU and CUDA
  const std::string& src_;  // the user's source: line texts for messages
  std::vector<Token> t_;    // its tokens (of the preprocessed text, with the user's line numbers)
  const std::vector<std::pair<std::string, std::string>>& defines_;
  const ConstantValues& constants_;
  bool checked_;
  bool uses_double_;  // the source names `double` (a CPU/CUDA extension): literals stay double
  std::vector<ParsedKernel> kernels_;
  std::vector<std::size_t> kernel_keywords_;
  std::vector<FunctionConstantDecl> function_constants_;
  std::vector<std::string> kernel_qualified_names_;
  std::vector<bool> uses_fibers_;  // per kernel
  std::map<std::size_t, std::string> struct_accessors_;  // closing brace → swizzle-named member accessors
  std::set<std::size_t> qualified_pointers_;  // the '*' of kernels' buffer parameters (see kernel_pointer_qualifier)
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
  std::set<std::size_t> deduced_thread_params_;  // template `thread T*` parameters made checked
  // Checked mode: tokens written as other text (`&t[i]` → `element_address(t, i)`, checked_addresses.hpp).
  std::map<std::size_t, std::string> checked_replace_;
  // Checked mode: `thread T (&a)[N]`, `thread T a[N]` and lambdas' `thread auto* p` parameters: first token → (last token, their text).
  std::map<std::size_t, std::pair<std::size_t, std::string>> array_references_;
  // Checked mode: `&param` of a kernel's reference parameter, by the '&'.
  std::map<std::size_t, std::string> checked_addresses_;
  SpaceOverloads space_overloads_;            // functions overloaded only by address space
  std::map<std::size_t, std::map<std::size_t, std::string>> range_designators_;  // by `{`: for targets without them
  std::set<std::size_t> conditional_literals_;  // `c ? h : 0`: integer literal branches, for CUDA
  ConditionalArms conditional_arms_;            // `c ? h : f`: branches cast to MSL's type, for CUDA
  std::map<std::size_t, std::string> active_edits_;  // those of range_designators_ applied (inside functions)
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

  // Checked mode: what the token walk rewrites (checked_mode.hpp, checked_thread_params.hpp,
  // checked_addresses.hpp).
  void analyse_for_checked_mode() {
    checked_arrays_ = find_checked_arrays(t_);
    for (const auto& [first, array] : checked_arrays_) {
      if (!array.refused.empty()) fail(array.name, array.refused);
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
    AddressRewrites addresses = find_address_rewrites(t_, handled, function_templates_, checked_before_);
    for (const auto& [at, text] : addresses.before) checked_before_[at] = text + checked_before_[at];
    checked_replace_ = std::move(addresses.replace);
    std::set<std::string> array_names;
    for (const auto& [first, array] : checked_arrays_) array_names.insert(t_[array.name].text);
    for (const auto& [at, text] : array_arguments(t_, std::move(array_names), conditional_int_literals(t_))) checked_before_[at] += text;
    for (const auto& [at, text] : pointer_specialization_twins(t_)) checked_replace_[at] = text;
    deduced_thread_params_ = std::move(deduced.thread_parameters);
    array_references_ = array_reference_parameters(t_);
    const auto array_pointers = array_pointer_parameters(t_);
    array_references_.insert(array_pointers.begin(), array_pointers.end());
    AutoPointerParameters autos = auto_pointer_parameters(t_);
    array_references_.insert(autos.params.begin(), autos.params.end());
    for (const auto& [at, text] : autos.before) checked_before_[at] = text + checked_before_[at];
  }

  [[noreturn]] void fail(std::size_t i, const std::string& message) const { throw error_at(src_, t_[i], message); }

  // The top-level '*' of every kernel's buffer parameters (a template's once for all
  // its instantiations), unless the user qualified it already or the kernel passes the
  // pointer to a reference-to-pointer parameter.
  std::set<std::size_t> buffer_pointer_tokens() const {
    std::set<std::size_t> stars;
    const std::set<std::string> functions = pointer_reference_functions(t_);
    std::map<std::size_t, bool> by_reference;
    for (const auto& k : kernels_)
      for (const auto& p : k.params) {
        if (p.info.kind != ParamKind::buffer) continue;
        // Not one the kernel passes to a `T*&` parameter: that reference cannot bind a restrict pointer.
        auto seen = by_reference.find(p.name_token);  // instantiations share their template's parameters
        if (seen == by_reference.end())
          seen = by_reference.emplace(p.name_token, passed_to(t_, k.body_open, k.body_close, t_[p.name_token].text, functions)).first;
        if (seen->second) continue;
        for (auto it = p.type_tokens.rbegin(); it != p.type_tokens.rend(); ++it) {
          if (!t_[*it].is("*")) continue;
          const std::size_t next = *it + 1;
          const bool qualified = next < t_.size() && (t_[next].is_identifier("restrict") || t_[next].is_identifier("__restrict") ||
                                                      t_[next].is_identifier("__restrict__"));
          if (!qualified) stars.insert(*it);
          break;
        }
      }
    return stars;
  }

  // True at namespace scope (not inside a function, class or initializer).
  bool at_namespace_scope() const {
    for (bool ns : scopes_)
      if (!ns) return false;
    return true;
  }

  bool opens_namespace(std::size_t i) const { return msl::opens_namespace(t_, i); }

  bool after_member_access(std::size_t i) const {
    return i > 0 && (t_[i - 1].is(".") || t_[i - 1].is("->"));
  }

  // Writes `text` where token `tok` stood in the user's source.
  void emit(const std::string& text, const Token& tok, bool separate) {
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

  std::size_t skip_attribute(std::size_t i) const {
    int depth = 0;
    for (std::size_t j = i; j < t_.size(); ++j) {
      if (t_[j].is("[")) ++depth;
      else if (t_[j].is("]") && --depth == 0) return j + 1;
    }
    return t_.size();
  }

  std::string rename_in_directive(const std::string& text) const {
    std::string out;
    for (std::size_t i = 0; i < text.size();) {
      if (text[i] == '"') {
        std::size_t j = text.find('"', i + 1);
        j = j == std::string::npos ? text.size() : j + 1;
        out += text.substr(i, j - i);
        i = j;
      } else if (is_word_char(text[i]) && (i == 0 || !is_word_char(text[i - 1]))) {
        std::size_t j = i;
        while (j < text.size() && is_word_char(text[j])) ++j;
        const std::string word = text.substr(i, j - i);
        out += is_renamed_type(word) ? renamed_type(word) : word;
        i = j;
      } else {
        out += text[i++];
      }
    }
    return out;
  }

  void emit_directive(std::size_t i) {
    const Token& tok = t_[i];
    std::string body = tok.text.substr(1);
    std::size_t p = body.find_first_not_of(" \t");
    body = p == std::string::npos ? "" : body.substr(p);
    if (body.rfind("include", 0) == 0) {
      std::string target = body.substr(7);
      p = target.find_first_not_of(" \t");
      target = p == std::string::npos ? "" : target.substr(p);
      while (!target.empty() && (target.back() == ';' || target.back() == ' ')) target.pop_back();  // "#include <metal_stdlib>;" is common
      if (target.rfind("<metal_", 0) == 0 || target.rfind("<simd/", 0) == 0) return;  // the prelude provides them
      fail(i, "#include " + target + " is not supported: metalcall compiles one source; paste the code in, "
              "or pass macros with defines=");
    }
    emit(rename_in_directive(tok.text), tok, true);
  }

  const FunctionConstantDecl* constant_at(std::size_t token, bool attribute) const {
    for (const auto& c : function_constants_)
      if ((attribute ? c.attribute_token : c.constant_token) == token) return &c;
    return nullptr;
  }

  void emit_user_code() {
    const std::vector<std::size_t>& kernel_keywords = kernel_keywords_;
    std::vector<std::pair<std::size_t, std::size_t>> skipped;  // template instantiation declarations
    for (const auto& k : kernels_)
      if (k.instantiation) skipped.emplace_back(k.declaration_begin, k.declaration_end);
    for (const auto& range : space_qualified_duplicates(t_)) skipped.push_back(range);
    for (const auto& range : space_overloads_.skip) skipped.push_back(range);
    std::vector<int> swz;
    for (std::size_t i = 0; i < t_.size(); ++i) {
      const Token& tok = t_[i];
      bool skip = false;
      for (const auto& [b, e] : skipped)
        if (i == b) {
          i = e;  // the entry point instantiates it
          skip = true;
        }
      if (skip) continue;
      if (auto before = text_before_.find(i); before != text_before_.end()) emit(before->second, tok, true);
      if (auto before = checked_before_.find(i); before != checked_before_.end()) emit(before->second, tok, true);
      if (auto replaced = checked_replace_.find(i); replaced != checked_replace_.end()) {
        if (!replaced->second.empty()) emit(replaced->second, tok, true);
        continue;
      }
      // A local array's GNU range designator becomes a loop (not at namespace scope: no statements there).
      auto range = range_designators_.find(i);
      if (range != range_designators_.end() && !at_namespace_scope()) active_edits_.insert(range->second.begin(), range->second.end());
      auto arms = conditional_arms_.before.find(i);
      auto edit = active_edits_.find(i);
      if (edit != active_edits_.end()) {
        if (!edit->second.empty()) {
          if (arms != conditional_arms_.before.end()) emit(arms->second, tok, true);
          emit(edit->second, tok, true);
        }
        continue;
      }
      if (arms != conditional_arms_.before.end()) emit(arms->second, tok, true);
      if (conditional_arms_.colons.count(i)) {
        emit("), (", tok, true);
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
          if ((tok.is(".") || tok.is("->")) && i + 1 < t_.size() && t_[i + 1].kind == TokenKind::identifier &&
              is_swizzle(t_[i + 1].text, &swz)) {
            // v.xy → v.template mtl_swizzle<0,1>(); a write target gets the proxy.
            const bool write = i + 2 < t_.size() && is_assignment(t_[i + 2]);
            // Comma-free (mtl_swz<1210> for .zyx), so it survives being a macro argument.
            emit(tok.text + "template " + (write ? "mtl_swz_ref<" : "mtl_swz<") + swizzle_code(swz) + ">()", tok, false);
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
            emit(guarded_division(tok.text), tok, false);
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
        const std::size_t star = address_space_pointer_end(i);
        if (star != std::string::npos &&
            (!thread_pointer(i, star) || declares_variable(star) || is_checked_thread_parameter(t_, i, star, deduced_thread_params_) ||
             ((declares_pointer_reference(star) || returns_pointer(i, star)) &&
              element_text(i, star).find("auto") == std::string::npos) ||
             is_function_template_argument(t_, i, star, function_templates_) || is_pointer_cast(t_, i, star)) &&
            !is_type_argument(t_, i, star, function_templates_)) {
          // `const constant auto* p = q;`: the checked pointer's element deduced (metal_checked_addresses.h's guides).
          const std::string element = element_text(i, star);
          const bool deduced = element == "auto" || (element.size() > 5 && element.compare(element.size() - 5, 5, " auto") == 0);
          emit(deduced && declares_variable(star) ? "metal::mtl_checked" : "metal::mtl_checked<" + element + ">", tok, true);
          i = star;
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
        // reinterpret_cast<device uint*>(p): a checked pointer converts by a constructor.
        if (id == "reinterpret_cast" && i + 2 < t_.size() && t_[i + 1].is("<") &&
            address_space_pointer_end(i + 2) != std::string::npos) {
          emit("static_cast", tok, true);
          continue;
        }
        auto array = checked_arrays_.find(i);
        if (array != checked_arrays_.end()) {
          i = emit_checked_local_array(array->second);
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
      } else if (id == "device" || id == "thread") {
        // Address spaces have no meaning in host memory (nor to CUDA's generic pointers);
        // the reflection table keeps them.
      } else if (id == "constant" && constant_at(i, false)) {
        // `static constant constexpr const int x [[function_constant(0)]]` (MLX): one static, one const.
        const bool is_static = i > 0 && t_[i - 1].is_identifier("static");
        const bool has_const = (i + 1 < t_.size() && t_[i + 1].is_identifier("const")) ||
                               (i + 2 < t_.size() && t_[i + 1].is_identifier("constexpr") && t_[i + 2].is_identifier("const"));
        const std::string text = std::string(is_static ? "" : "static ") + (has_const ? "" : "const");
        if (!text.empty()) emit(text, tok, true);
      } else if (id == "is_function_constant_defined" && i + 3 < t_.size() && t_[i + 1].is("(") &&
                 t_[i + 3].is(")")) {
        const FunctionConstantDecl* found = nullptr;
        for (const auto& c : function_constants_)
          if (c.name == t_[i + 2].text) found = &c;
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
        if (space) emit(near_const ? std::string(space) : std::string(space) + " const", tok, true);
        else if (!near_const) emit("const", tok, true);
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

  // An integer-capable `/`, `%`, `/=` or `%=` (not `operator/`, not a swizzle's
  // compound assignment, whose proxy divides safely itself).
  bool is_division(std::size_t i) const {
    const Token& tok = t_[i];
    if (!(tok.is("/") || tok.is("%") || tok.is("/=") || tok.is("%="))) return false;
    if (i > 0 && t_[i - 1].is_identifier("operator")) return false;
    std::vector<int> swz;
    if ((tok.is("/=") || tok.is("%=")) && i >= 2 && (t_[i - 2].is(".") || t_[i - 2].is("->")) &&
        is_swizzle(t_[i - 1].text, &swz))
      return false;
    return true;
  }

  // metal_division.h: the tag shares the operator's precedence, so operands are unchanged.
  static std::string guarded_division(const std::string& op) {
    if (op == "/") return "/ metal::mtl_rt::idiv_tag() /";
    if (op == "%") return "% metal::mtl_rt::imod_tag() %";
    if (op == "/=") return "/= metal::mtl_rt::idiv_rhs() =";
    return "%= metal::mtl_rt::imod_rhs() =";
  }

  // A pointer parameter of an overload by address space, or a variable passed to one
  // (address_space_overloads.cpp); returns false for any other token. Moves i past
  // what it wrote.
  bool emit_space_overload(std::size_t& i) {
    auto p = space_overloads_.params.find(i);
    if (p != space_overloads_.params.end()) {
      emit(p->second.second, t_[i], true);
      i = p->second.first;
      return true;
    }
    auto a = space_overloads_.args.find(i);
    if (a == space_overloads_.args.end()) return false;
    emit(a->second, t_[i], false);
    return true;
  }

  static bool is_address_space(const Token& t) {
    return t.is_identifier("device") || t.is_identifier("constant") || t.is_identifier("threadgroup");
  }

  // If the tokens from i are `[const] device|constant|threadgroup [const] TYPE [const] *`,
  // the index of the '*'; else npos.
  std::size_t address_space_pointer_end(std::size_t i) const {
    std::size_t j = i;
    while (j < t_.size() && (t_[j].is_identifier("const") || t_[j].is_identifier("volatile") || coherent_at(j)))
      j += coherent_at(j) ? 4 : 1;
    // `thread` pointers too: checked mode is the only caller.
    auto space = [](const Token& t) { return is_address_space(t) || t.is_identifier("thread"); };
    if (j >= t_.size() || !space(t_[j])) return std::string::npos;
    if (j != i && i > 0 && space(t_[i - 1])) return std::string::npos;
    int depth = 0;
    for (++j; j < t_.size(); ++j) {
      const Token& t = t_[j];
      if (t.is("<")) ++depth;
      else if (t.is(">")) --depth;
      else if (t.is(">>")) depth -= 2;
      else if (depth == 0 && t.is("*")) return j;
      else if (depth == 0 && (t.is("&") || t.is(";") || t.is(",") || t.is(")") || t.is("=") || t.is("{") ||
                              t.is("[") || t.is("(")))
        return std::string::npos;
    }
    return std::string::npos;
  }

  // `coherent(device)` / `coherent(system)` at j (MSL 3.2; dropped: one memory here).
  bool coherent_at(std::size_t j) const {
    return j + 3 < t_.size() && t_[j].is_identifier("coherent") && t_[j + 1].is("(") && t_[j + 3].is(")");
  }

  // True when the address space of the pointer type [i, star] is `thread`.
  bool thread_pointer(std::size_t i, std::size_t star) const {
    for (std::size_t j = i; j < star; ++j)
      if (t_[j].is_identifier("thread")) return true;
    return false;
  }

  // `* [const] name =` or `* [const] name;`: a variable, not a parameter or a cast.
  // (Checked mode checks `thread` pointer variables, and parameters as
  // is_checked_thread_parameter says, and casts: is_pointer_cast.)
  bool declares_variable(std::size_t star) const {
    std::size_t j = star + 1;
    while (j < t_.size() && t_[j].is_identifier("const")) ++j;
    return j + 1 < t_.size() && t_[j].kind == TokenKind::identifier && (t_[j + 1].is("=") || t_[j + 1].is(";"));
  }

  // `thread T* name(…)`, not constexpr (a checked pointer is no literal type): a function
  // returning a thread pointer (MLX's `thread elem_type* elems()`), so that its callers keep
  // the bounds of what it returns.
  bool returns_pointer(std::size_t i, std::size_t star) const {
    std::size_t j = star + 1;
    while (j < t_.size() && t_[j].is_identifier("const")) ++j;
    if (j + 1 >= t_.size() || t_[j].kind != TokenKind::identifier || !t_[j + 1].is("(") ||
        t_[j].is_identifier("operator"))
      return false;
    for (std::size_t k = i; k-- > 0;) {
      const Token& b = t_[k];
      if (b.is(";") || b.is("{") || b.is("}") || b.is(")") || b.is(":") || b.kind == TokenKind::directive) break;
      if (b.is_identifier("constexpr")) return false;
    }
    return true;
  }

  // `* [const] & name` then `=`, `;`, `,` or `)`: a reference to a pointer (`thread float* &r = q;`,
  // a parameter `thread float*& p`), which must bind to the checked pointer it names.
  bool declares_pointer_reference(std::size_t star) const {
    std::size_t j = star + 1;
    while (j < t_.size() && t_[j].is_identifier("const")) ++j;
    if (j + 2 >= t_.size() || !t_[j].is("&") || t_[j + 1].kind != TokenKind::identifier) return false;
    const Token& after = t_[j + 2];
    return after.is("=") || after.is(";") || after.is(",") || after.is(")");
  }

  // The pointee type of tokens [i, star): address spaces dropped, const kept.
  std::string element_text(std::size_t i, std::size_t star) const {
    std::vector<std::size_t> tokens;
    bool is_const = false, is_volatile = false;
    for (std::size_t j = i; j < star; ++j) {
      if (coherent_at(j)) {
        j += 3;
        continue;
      }
      if (t_[j].is_identifier("thread")) continue;
      if (is_address_space(t_[j])) {
        is_const = is_const || t_[j].is_identifier("constant");  // constant memory is read-only
        continue;
      }
      if (t_[j].is_identifier("const")) {
        is_const = true;
        continue;
      }
      if (t_[j].is_identifier("volatile")) {
        is_volatile = true;
        continue;
      }
      tokens.push_back(j);
    }
    return std::string(is_const ? "const " : "") + (is_volatile ? "volatile " : "") + type_text(t_, tokens, false);
  }

  // Checked mode: `threadgroup T name[N][M];` → `static thread_local metal::mtl_checked_array<…> name;`
  // (the target's threadgroup storage qualifier).
  // Returns the index of the last token consumed, or npos to fall back; with `write`
  // false only says which. A `volatile` before `threadgroup` goes to the element type.
  std::size_t emit_checked_array(std::size_t i, bool write = true) {
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

  // After a threadgroup declaration (metal_sync.h): METAL_THREADGROUP_FITS(name) for each
  // variable it declares (one over Apple GPUs' 32 KiB makes the call an ExecutionError), at
  // the name's column so that it lines up with the declaration; then
  // METAL_THREADGROUP_TOTAL_FITS with every threadgroup variable in scope: Metal adds them (and
  // a call's [[threadgroup(i)]] lengths) up against the same 32 KiB.
  void emit_threadgroup_checks(const ThreadgroupChecks& checks) {
    for (std::size_t n : checks.declared) emit("METAL_THREADGROUP_FITS(" + t_[n].text + ");", t_[n], true);
    std::string list, sum;
    for (std::size_t n : checks.in_scope) {
      list += (list.empty() ? "" : ", ") + t_[n].text;
      sum += (sum.empty() ? "sizeof(" : " + sizeof(") + t_[n].text + ")";
    }
    emit("METAL_THREADGROUP_TOTAL_FITS(\"" + list + "\", " + sum + ", " + (checks.in_scope.size() > 1 ? "true" : "false") +
             ");",
         t_[checks.in_scope.back()], true);
  }

  // The `{` of every block around token i, innermost first.
  std::vector<std::size_t> enclosing_braces(std::size_t i) const {
    std::vector<std::size_t> out;
    int depth = 0;
    for (std::size_t j = i; j-- > 0;) {
      if (t_[j].is("}")) ++depth;
      else if (t_[j].is("{") && depth > 0) --depth;
      else if (t_[j].is("{")) out.push_back(j);
    }
    return out;
  }

  // Records the threadgroup variables the declaration at i (ending at `semicolon`) declares
  // and the checks its `;` gets (threadgroup_checks_): each of them, and their sum with those
  // declared before in enclosing blocks. Variables of blocks closed before are not counted.
  void note_threadgroup_variables(std::size_t i, std::size_t semicolon, const std::vector<std::size_t>& names) {
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

  // True when the innermost brace around token i opens a function's body or a block in one
  // (where a statement may go): not a namespace's, a class's or an enum's.
  bool in_function_body(std::size_t i) const {
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

  // The variables the threadgroup declaration at i declares (`threadgroup float a[64], b = 0;`:
  // a and b), checked after its `;` (threadgroup_checks_).
  void check_threadgroup_sizes(std::size_t i) {
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

  // Writes a found array as `metal::mtl_checked_array<T, N, Kind> name`; returns the
  // index of the last token consumed (the `;` or `=` follows).
  std::size_t emit_checked_local_array(const CheckedArray& d) {
    std::string type = (d.const_element ? "const " : "") + type_text(t_, d.type, false);
    for (auto it = d.extents.rbegin(); it != d.extents.rend(); ++it)
      type = "metal::mtl_checked_array<" + type + ", (" + *it + "), " + std::to_string(d.kind) + ">";
    emit(type + " " + d.qualifier + t_[d.name].text, t_[d.begin], true);
    return d.end - 1;
  }

  // True when the `threadgroup` at i starts a variable declaration, not a
  // pointer or reference type: no '*' or '&' before the declared name.
  // `threadgroup float s[32] = {0};` on a target without initializers of group memory (CUDA's
  // __shared__): the initializer is left out.
  void drop_initializer(std::size_t i) {
    const auto [first, last] = declaration_initializer(t_, i);
    for (std::size_t k = first; k < last; ++k) active_edits_[k] = "";
  }

  bool declares_storage(std::size_t i) const {
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
      if (t.is("<") || t.is("(")) ++depth;
      else if (t.is(">") || t.is(")")) {
        if (--depth < 0) return false;  // a parameter list ended: a parameter
      } else if (t.is(">>")) depth -= 2;
      else if (depth == 0 && (t.is("*") || t.is("&"))) return false;
      else if (depth == 0 && (t.is(";") || t.is("=") || t.is(",") || t.is("["))) return true;
    }
    return false;
  }

  std::string translate_number(const Token& tok) const {
    const std::string& s = tok.text;
    const bool hex = s.size() > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    if (!hex && (s.back() == 'h' || s.back() == 'H')) {
      std::string v = s.substr(0, s.size() - 1);
      const bool has_point = v.find_first_of(".eE") != std::string::npos;
      return std::string(target_.half_literal()) + "(" + v + (has_point ? "f" : ".0f") + ")";
    }
    // MSL has no double: an unsuffixed floating literal (`0.5`, `1e-3`) is a float, so
    // `0.5 * x` stays float and `{0.5 * x, y}` initialises a pair of floats. A source
    // that uses the double extension (metal_double.h) keeps C++'s double literals.
    const bool floating = s.find_first_of(".eE") != std::string::npos;
    if (!hex && floating && !uses_double_ && (std::isdigit(static_cast<unsigned char>(s.back())) || s.back() == '.'))
      return s + "f";
    return s;
  }
};

}  // namespace

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
