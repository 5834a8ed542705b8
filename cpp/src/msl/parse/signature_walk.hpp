// The kernel-signature parser: its state and its steps, shared by the files that define
// them: signature_parser.cpp (kernels, attributes, function constants, binding indices),
// kernel_templates.cpp (template kernels and their instantiations) and kernel_params.cpp
// (one parameter's declaration and attributes). Private to parse/.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"
#include "msl/parse/signature_parser.hpp"

namespace metalcall::msl {

// Buffers, threadgroup memory, textures and samplers each have their own indices.
inline int binding_table(ParamKind kind) {
  switch (kind) {
    case ParamKind::threadgroup_memory: return 1;
    case ParamKind::texture: return 2;
    case ParamKind::sampler: return 3;
    default: return 0;
  }
}

struct Attribute {
  std::string name;
  std::vector<std::string> args;  // raw argument texts, comma separated
  std::size_t token;              // first token of the name
};

class SignatureParser {
 public:
  SignatureParser(const std::vector<Token>& t, const std::string& src) : t_(t), src_(src) {}

  // `typedef uint index_t;` and `using index_t = uint;`, so that aliased types
  // classify like what they name.
  void collect_aliases();

  std::string resolve_alias(std::string type) const;

  // Enumerations' underlying integer types (enum_types.cpp): `enum Mode : uint`, `enum class
  // E` (int), `enum F { A, B }` (unsigned int, as clang lays it out).
  void collect_enums();
  // The underlying type's name when `type` (as spelled, or through its aliases) is an enum; else empty.
  std::string enum_underlying(const std::string& type) const;

  ParsedSource run();

 private:
  enum class Kind { definition, template_definition, instantiation };
  const std::vector<Token>& t_;
  const std::string& src_;
  // Template kernels by name; a name may have several (MLX overloads `block_masked_gemm`
  // by its template parameter list), told apart at an instantiation by its arguments.
  std::multimap<std::string, ParsedKernel> templates_;
  std::map<std::string, std::string> aliases_;     // typedef / using names → the type they name
  std::map<std::string, std::string> enums_;       // enum names → their underlying type (collect_enums)
  // Aliases of pointer and reference types (`typedef device float* P;`, `template <class T> using
  // cref = constant T&;`): their template parameters and the tokens of the type they name, which
  // a kernel parameter declared with one is read as (expand_indirect_alias).
  struct IndirectAlias {
    std::vector<std::string> parameters;
    std::vector<std::size_t> target;
  };
  std::map<std::string, IndirectAlias> indirect_aliases_;
  // Replaces in `type` (a parameter's type tokens) an alias of a pointer or reference type by the
  // type it names, its template arguments put in; false where there is none.
  bool expand_indirect_alias(std::vector<std::size_t>& type) const;
  static constexpr const char* kAmbiguousAlias = "";  // a name declared as two types (collect_aliases)

  bool member_access(std::size_t i) const;

  // `kernel void`, `[[kernel]] void` or `[[kernel, max_total_threads_per_threadgroup(N)]] void`.
  bool starts_kernel(std::size_t i) const;

  [[noreturn]] void fail(std::size_t i, const std::string& message) const {
    throw error_at(src_, t_[std::min(i, t_.size() - 1)], message);
  }

  std::size_t matching(std::size_t open, const char* open_text, const char* close_text) const;

  // Parses `[[a, b(1)]]` starting at i (the first '['); returns the index after it.
  std::size_t parse_attributes(std::size_t i, std::vector<Attribute>& out) const;

  // An index: an integer literal or a constant expression of them (`1200 + 0`, as
  // ggml's macros write), with + - * / and parentheses.
  int integer_argument(const Attribute& a) const;

  // A template kernel may compute its limit from its parameters (`WM * WN * 32`): 0 here, and
  // the text is kept for each instantiation (resolve_max_threads, with the arguments put in).
  int max_threads_argument(const Attribute& a) const;

  // The value of a limit's text whose names are program-scope integer constants (`constant
  // constexpr int BS = 96;`, as the names of template parameters once replaced), or 0.
  int resolve_max_threads(const std::string& text, int depth = 0) const;
  // Records a kernel's [[max_total_threads_per_threadgroup(x)]]: its value, or its text.
  void note_max_threads(const Attribute& a, ParsedKernel& k) const;

  // The text of a string literal argument; adjacent literals join ("a_" "float" from a macro's #x).
  static std::string unquote(const std::string& s);

  // The `template <...>` or `template` that precedes the kernel at `start` (after
  // its attributes), or npos.
  std::size_t template_before(std::size_t start, bool* with_parameters) const;

  Kind parse_kernel(std::size_t start, ParsedKernel& k);

  // Names declared by `template <typename T, int N = 4>` (open = the '<'); a function
  // pointer parameter (`void (*deq)(device const T*, short)`, as ggml writes) is named
  // by the identifier after its '*'.
  std::vector<std::string> template_parameter_names(std::size_t open) const;

  // The default argument's tokens of each template parameter (empty: none), in order.
  std::vector<std::vector<std::size_t>> template_parameter_defaults(std::size_t open) const;

  // The explicit template arguments of an instantiation (`f<float, 4>`, the '<' at i):
  // their tokens; `last` gets the closing '>'.
  std::vector<std::vector<std::size_t>> explicit_arguments(std::size_t i, std::size_t* last) const;

  // Completes `args` for the template kernel `tmpl`: missing trailing arguments take the
  // parameters' defaults, in which earlier parameters' names stand for their arguments
  // (`typename AccT = T`). False (and why) when they do not fit its parameters.
  bool fill_defaults(const ParsedKernel& tmpl, std::vector<std::vector<std::size_t>>& args, std::string* why) const;

  // The arguments C++ deduces for `tmpl` from an instantiation's parameter list (the
  // '(' at open), up to the first it cannot deduce (the rest may have defaults).
  bool deduce(const ParsedKernel& tmpl, std::size_t open, std::vector<std::vector<std::size_t>>& args,
              std::string* why) const;

  // `template [[host_name("add_float")]] kernel void add<float>(…);`, or with the
  // arguments deduced from the parameters: `… kernel void add(device float* a …);`.
  Kind parse_instantiation(std::size_t template_token, std::size_t i, ParsedKernel& k);

  // By the template kernel's keyword_token: its parameters' names and default arguments' tokens.
  std::map<std::size_t, std::vector<std::string>> template_names_;
  std::map<std::size_t, std::vector<std::vector<std::size_t>>> template_defaults_;

  void parse_params(std::size_t begin, std::size_t end, ParsedKernel& k, const std::vector<std::string>& template_names);

  void parse_param(std::size_t begin, std::size_t end, ParsedKernel& k);

  std::vector<FunctionConstantDecl> parse_function_constants() const;

  // Parameters without [[buffer(n)]] / [[threadgroup(n)]] get the lowest free index, in order
  // (later, when some index is an expression only the compiler can evaluate).
  void assign_implicit_indices(ParsedKernel& k);
};

}  // namespace metalcall::msl
