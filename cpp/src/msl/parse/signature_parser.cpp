// The kernel-signature parser (reflection): kernels, their parameter tables and the
// function constants of a token stream, with the token positions the translator needs.
// (Over 600 lines: one parser class whose steps share the token cursor and tables.)
#include "msl/parse/signature_parser.hpp"
#include "msl/parse/resource_params.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "metalcall/errors.hpp"
#include "msl/analysis/msl_rules.hpp"
#include "msl/parse/integer_expression.hpp"
#include "msl/parse/template_deduction.hpp"
#include "msl/lex/token_text.hpp"

namespace metalcall::msl {

namespace {

// Buffers, threadgroup memory, textures and samplers each have their own indices.
int binding_table(ParamKind kind) {
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
  void collect_aliases() {
    for (std::size_t i = 0; i + 2 < t_.size(); ++i) {
      std::string name, target;
      std::size_t j = i;
      if (t_[i].is_identifier("typedef")) {
        for (j = i + 1; j < t_.size() && !t_[j].is(";"); ++j) {}
        if (j >= t_.size() || j < i + 3 || t_[j - 1].kind != TokenKind::identifier) continue;
        name = t_[j - 1].text;
        for (std::size_t k = i + 1; k + 1 < j; ++k) target += (target.empty() ? "" : " ") + t_[k].text;
      } else if (t_[i].is_identifier("using") && t_[i + 1].kind == TokenKind::identifier && t_[i + 2].is("=")) {
        name = t_[i + 1].text;
        for (j = i + 3; j < t_.size() && !t_[j].is(";"); ++j) target += (target.empty() ? "" : " ") + t_[j].text;
      } else {
        continue;
      }
      for (const char* prefix : {"metal :: ", "const "})
        if (target.rfind(prefix, 0) == 0) target = target.substr(std::string(prefix).size());
      aliases_[name] = target;
    }
  }

  std::string resolve_alias(std::string type) const {
    for (int hops = 0; hops < 16; ++hops) {
      auto it = aliases_.find(type);
      if (it == aliases_.end()) break;
      type = it->second;
    }
    return type;
  }

  ParsedSource run() {
    collect_aliases();
    ParsedSource out;
    for (std::size_t i = 0; i < t_.size(); ++i) {
      if (!starts_kernel(i)) continue;
      out.kernel_keywords.push_back(i);
      ParsedKernel k;
      switch (parse_kernel(i, k)) {
        case Kind::definition:
          out.kernels.push_back(std::move(k));
          i = out.kernels.back().body_close;
          break;
        case Kind::template_definition:
          i = k.body_close;
          templates_.emplace(k.function_name, std::move(k));
          break;
        case Kind::instantiation:
          i = k.declaration_end;
          out.kernels.push_back(std::move(k));
          break;
      }
    }
    // MSL: kernel names in a library are unique.
    std::set<std::string> seen;
    for (const auto& k : out.kernels) {
      if (!seen.insert(k.info.name).second)
        throw error_at(src_, t_[k.name_token], "redefinition of kernel '" + k.info.name + "'");
    }
    out.function_constants = parse_function_constants();
    return out;
  }

 private:
  enum class Kind { definition, template_definition, instantiation };
  const std::vector<Token>& t_;
  const std::string& src_;
  // Template kernels by name; a name may have several (MLX overloads `block_masked_gemm`
  // by its template parameter list), told apart at an instantiation by its arguments.
  std::multimap<std::string, ParsedKernel> templates_;
  std::map<std::string, std::string> aliases_;     // typedef / using names → the type they name

  bool member_access(std::size_t i) const {
    return i > 0 && (t_[i - 1].is(".") || t_[i - 1].is("->") || t_[i - 1].is("::"));
  }

  // `kernel void`, `[[kernel]] void` or `[[kernel, max_total_threads_per_threadgroup(N)]] void`.
  bool starts_kernel(std::size_t i) const {
    if (t_[i].is_identifier("kernel") && !member_access(i)) return !(i > 0 && t_[i - 1].is("["));
    return i + 4 < t_.size() && t_[i].is("[") && t_[i + 1].is("[") && t_[i + 2].is_identifier("kernel") &&
           (t_[i + 3].is("]") || t_[i + 3].is(","));
  }

  [[noreturn]] void fail(std::size_t i, const std::string& message) const {
    throw error_at(src_, t_[std::min(i, t_.size() - 1)], message);
  }

  std::size_t matching(std::size_t open, const char* open_text, const char* close_text) const {
    int depth = 0;
    for (std::size_t i = open; i < t_.size(); ++i) {
      if (t_[i].is(open_text)) ++depth;
      else if (t_[i].is(close_text) && --depth == 0) return i;
    }
    fail(open, std::string("no matching '") + close_text + "'");
  }

  // Parses `[[a, b(1)]]` starting at i (the first '['); returns the index after it.
  std::size_t parse_attributes(std::size_t i, std::vector<Attribute>& out) const {
    const std::size_t close = matching(i, "[", "]");
    if (close == 0 || !t_[close - 1].is("]")) fail(i, "malformed attribute");
    std::size_t j = i + 2;
    while (j < close - 1) {
      if (t_[j].is(",")) {
        ++j;
        continue;
      }
      Attribute a;
      a.token = j;
      // Namespaced attributes (gnu::x) keep their full name.
      while (j < close - 1 && !t_[j].is("(") && !t_[j].is(",")) a.name += t_[j++].text;
      if (j < close - 1 && t_[j].is("(")) {
        const std::size_t end = matching(j, "(", ")");
        std::string arg;
        for (std::size_t k = j + 1; k < end; ++k) {
          if (t_[k].is(",")) {
            a.args.push_back(arg);
            arg.clear();
          } else {
            arg += t_[k].text;
          }
        }
        a.args.push_back(arg);
        j = end + 1;
      }
      out.push_back(std::move(a));
    }
    return close + 1;
  }

  // An index: an integer literal or a constant expression of them (`1200 + 0`, as
  // ggml's macros write), with + - * / and parentheses.
  int integer_argument(const Attribute& a) const {
    long value = 0;
    if (a.args.size() != 1 || !integer_expression(a.args[0], value) || value < 0 || value > 999999999) {
      fail(a.token, "[[" + a.name + "(...)]] needs an integer literal index");
    }
    return static_cast<int>(value);
  }

  // A template kernel may compute its limit from its parameters (`WM * WN * 32`); that
  // limit is not known here and is left out (0: none declared).
  int max_threads_argument(const Attribute& a) const {
    long value = 0;
    return a.args.size() == 1 && integer_expression(a.args[0], value) ? integer_argument(a) : 0;
  }

  // The text of a string literal argument; adjacent literals join ("a_" "float" from a macro's #x).
  static std::string unquote(const std::string& s) {
    if (s.size() < 2 || s.front() != '"' || s.back() != '"') return s;
    std::string out;
    bool inside = false;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '"') inside = !inside;
      else if (inside && s[i] == '\\' && i + 1 < s.size()) out += s[++i];
      else if (inside) out += s[i];
    }
    return out;
  }

  // The `template <...>` or `template` that precedes the kernel at `start` (after
  // its attributes), or npos.
  std::size_t template_before(std::size_t start, bool* with_parameters) const {
    std::size_t b = start;
    while (b >= 2 && t_[b - 1].is("]") && t_[b - 2].is("]")) {
      int depth = 0;
      std::size_t open = b - 1;
      for (; open > 0; --open) {
        if (t_[open].is("]")) ++depth;
        else if (t_[open].is("[") && --depth == 0) break;
      }
      b = open;
    }
    if (b >= 1 && t_[b - 1].is_identifier("template")) {
      *with_parameters = false;
      return b - 1;
    }
    if (b >= 1 && (t_[b - 1].is(">") || t_[b - 1].is(">>"))) {  // `typename C = Less<T>>`
      int depth = 0;
      for (std::size_t j = b - 1; j > 0; --j) {
        if (t_[j].is(">")) ++depth;
        else if (t_[j].is(">>")) depth += 2;
        else if (t_[j].is("<") && --depth == 0) {
          if (t_[j - 1].is_identifier("template")) {
            *with_parameters = true;
            return j - 1;
          }
          break;
        }
      }
    }
    return std::string::npos;
  }

  Kind parse_kernel(std::size_t start, ParsedKernel& k) {
    k.keyword_token = start;
    std::size_t i = start;
    std::vector<Attribute> attrs;
    // Attributes written before the kernel keyword belong to the function.
    for (std::size_t b = start; b >= 2 && t_[b - 1].is("]") && t_[b - 2].is("]");) {
      int depth = 0;
      std::size_t open = b - 1;
      for (; open > 0; --open) {
        if (t_[open].is("]")) ++depth;
        else if (t_[open].is("[") && --depth == 0) break;
      }
      parse_attributes(open, attrs);
      if (open == 0) break;
      b = open;
    }
    bool template_parameters = false;
    const std::size_t template_token = template_before(start, &template_parameters);
    if (t_[i].is("[")) i = parse_attributes(i, attrs);
    else ++i;
    while (i < t_.size() && t_[i].is("[")) i = parse_attributes(i, attrs);
    // MLX's spelling of an instantiation: `template [[host_name("x")]] [[kernel]]
    // decltype(f<float>) f<float>;` — the type comes from the template itself.
    const bool decltype_instantiation = template_token != std::string::npos && !template_parameters &&
                                        i < t_.size() && t_[i].is_identifier("decltype");
    // ggml's: `template [[host_name("x")]] kernel kernel_unary_t kernel_unary_impl<float>;`,
    // the function type a typedef of decltype(...).
    const bool typedef_instantiation = template_token != std::string::npos && !template_parameters &&
                                       i + 1 < t_.size() && t_[i].kind == TokenKind::identifier &&
                                       !t_[i].is_identifier("void") && t_[i + 1].kind == TokenKind::identifier;
    if (decltype_instantiation) {
      if (i + 1 >= t_.size() || !t_[i + 1].is("(")) fail(i, "expected decltype(...)");
      i = matching(i + 1, "(", ")") + 1;
    } else if (typedef_instantiation) {
      ++i;
    } else {
      if (i >= t_.size() || !t_[i].is_identifier("void")) fail(i, "a kernel function must return void");
      ++i;
    }
    while (i < t_.size() && t_[i].is("[")) i = parse_attributes(i, attrs);
    if (i >= t_.size() || t_[i].kind != TokenKind::identifier) fail(i, "expected the kernel's name");
    k.name_token = i;
    k.function_name = t_[i].text;
    k.info.name = t_[i].text;
    k.info.line = t_[i].line;
    ++i;
    for (const auto& a : attrs) {
      if (a.name == "max_total_threads_per_threadgroup") k.info.declared_max_threads = max_threads_argument(a);
      if (a.name == "host_name") {
        if (a.args.size() != 1 || unquote(a.args[0]).empty()) fail(a.token, "[[host_name(\"name\")]] needs a name");
        k.info.name = unquote(a.args[0]);
      }
    }

    if (template_token != std::string::npos && !template_parameters) {
      return parse_instantiation(template_token, i, k);
    }
    if (i >= t_.size() || !t_[i].is("(")) fail(i, "expected '(' after the kernel's name");
    const std::size_t close = matching(i, "(", ")");
    std::vector<std::string> template_names;
    if (template_parameters) {
      template_names = template_parameter_names(template_token + 1);
      template_defaults_[start] = template_parameter_defaults(template_token + 1);
    }
    parse_params(i + 1, close, k, template_names);
    i = close + 1;
    while (i < t_.size() && !t_[i].is("{") && !t_[i].is(";")) {
      if (t_[i].is("[")) i = parse_attributes(i, attrs);
      else ++i;
    }
    if (i >= t_.size() || t_[i].is(";")) fail(k.name_token, "kernel '" + k.info.name + "' is declared but not defined");
    k.body_open = i;
    k.body_close = matching(i, "{", "}");
    for (const auto& a : attrs)
      if (a.name == "max_total_threads_per_threadgroup") k.info.declared_max_threads = max_threads_argument(a);
    return template_parameters ? Kind::template_definition : Kind::definition;
  }

  // Names declared by `template <typename T, int N = 4>` (open = the '<'); a function
  // pointer parameter (`void (*deq)(device const T*, short)`, as ggml writes) is named
  // by the identifier after its '*'.
  std::vector<std::string> template_parameter_names(std::size_t open) const {
    std::vector<std::string> names;
    int depth = 0, parens = 0;
    std::string last;
    bool defaulted = false, pointer_name = false;
    for (std::size_t j = open; j < t_.size(); ++j) {
      const Token& t = t_[j];
      if (t.is("(")) {
        ++parens;
      } else if (t.is(")")) {
        --parens;
      } else if (parens > 0) {
        if (depth == 1 && parens == 1 && !defaulted && !pointer_name && t.kind == TokenKind::identifier &&
            t_[j - 1].is("*")) {
          last = t.text;
          pointer_name = true;
        }
      } else if (t.is("<")) {
        if (depth++ == 0) continue;
      } else if (t.is(">") || t.is(">>")) {
        depth -= t.is(">") ? 1 : 2;
        if (depth <= 0) {
          if (!last.empty()) names.push_back(last);
          break;
        }
      } else if (depth == 1 && t.is(",")) {
        if (!last.empty()) names.push_back(last);
        last.clear();
        defaulted = pointer_name = false;
        continue;
      } else if (depth == 1 && t.is("=")) {
        defaulted = true;
      } else if (depth == 1 && !defaulted && !pointer_name && t.kind == TokenKind::identifier) {
        last = t.text;
      }
    }
    return names;
  }

  // The default argument's tokens of each template parameter (empty: none), in order.
  std::vector<std::vector<std::size_t>> template_parameter_defaults(std::size_t open) const {
    std::vector<std::vector<std::size_t>> defaults(1);
    int depth = 0;
    bool defaulted = false;
    for (std::size_t j = open; j < t_.size(); ++j) {
      const Token& t = t_[j];
      if (t.is("<") || t.is("(")) {
        if (depth++ == 0) continue;
      } else if (t.is(">") || t.is(")") || t.is(">>")) {
        depth -= t.is(">>") ? 2 : 1;
        if (t.is(">>") && depth == 0 && defaulted) defaults.back().push_back(kClosingAngle);  // `= Less<T>>`
        if (depth <= 0) break;
      } else if (depth == 1 && t.is(",")) {
        defaults.emplace_back();
        defaulted = false;
        continue;
      } else if (depth == 1 && t.is("=")) {
        defaulted = true;
        continue;
      }
      if (defaulted) defaults.back().push_back(j);
    }
    return defaults;
  }

  // The explicit template arguments of an instantiation (`f<float, 4>`, the '<' at i):
  // their tokens; `last` gets the closing '>'.
  std::vector<std::vector<std::size_t>> explicit_arguments(std::size_t i, std::size_t* last) const {
    std::vector<std::vector<std::size_t>> args(1);
    int depth = 0;
    std::size_t j = i;
    for (; j < t_.size(); ++j) {
      const Token& t = t_[j];
      if (t.is("<") || t.is("(")) {
        if (depth++ == 0) continue;
      } else if (t.is(">") || t.is(")")) {
        if (--depth == 0) break;
      } else if (t.is(">>")) {
        depth -= 2;
        if (depth == 0) args.back().push_back(kClosingAngle);  // `f<vec<float, 2>>`
        if (depth <= 0) break;
      } else if (depth == 1 && t.is(",")) {
        args.emplace_back();
        continue;
      }
      args.back().push_back(j);
    }
    *last = j;
    if (args.size() == 1 && args[0].empty()) args.clear();  // f<>
    return args;
  }

  // Completes `args` for the template kernel `tmpl`: missing trailing arguments take the
  // parameters' defaults, in which earlier parameters' names stand for their arguments
  // (`typename AccT = T`). False (and why) when they do not fit its parameters.
  bool fill_defaults(const ParsedKernel& tmpl, std::vector<std::vector<std::size_t>>& args, std::string* why) const {
    const auto& names = template_names_.at(tmpl.keyword_token);
    const auto defaults = template_defaults_.find(tmpl.keyword_token);
    while (defaults != template_defaults_.end() && args.size() < names.size() && args.size() < defaults->second.size() &&
           !defaults->second[args.size()].empty()) {
      std::vector<std::size_t> filled;
      for (std::size_t d : defaults->second[args.size()]) {
        std::size_t earlier = 0;
        while (d != kClosingAngle && earlier < args.size() && !t_[d].is_identifier(names[earlier].c_str())) ++earlier;
        if (d != kClosingAngle && earlier < args.size()) filled.insert(filled.end(), args[earlier].begin(), args[earlier].end());
        else filled.push_back(d);
      }
      args.push_back(std::move(filled));
    }
    if (args.size() == names.size()) return true;
    *why = "'" + tmpl.function_name + "' takes " + std::to_string(names.size()) + " template argument(s), " +
           std::to_string(args.size()) + " given";
    return false;
  }

  // The arguments C++ deduces for `tmpl` from an instantiation's parameter list (the
  // '(' at open), up to the first it cannot deduce (the rest may have defaults).
  bool deduce(const ParsedKernel& tmpl, std::size_t open, std::vector<std::vector<std::size_t>>& args,
              std::string* why) const {
    std::vector<std::vector<std::size_t>> pattern, deduced;
    for (const auto& p : tmpl.params) pattern.push_back(p.type_tokens);
    const auto& names = template_names_.at(tmpl.keyword_token);
    if (!deduce_template_arguments(t_, pattern, parameter_types(t_, open), names, deduced)) {
      *why = "the parameters of this instantiation do not match those of the template kernel '" + tmpl.function_name + "'";
      return false;
    }
    args.clear();
    for (auto& d : deduced) {
      if (d.empty()) break;
      args.push_back(std::move(d));
    }
    return true;
  }

  // `template [[host_name("add_float")]] kernel void add<float>(…);`, or with the
  // arguments deduced from the parameters: `… kernel void add(device float* a …);`.
  Kind parse_instantiation(std::size_t template_token, std::size_t i, ParsedKernel& k) {
    const auto [first, last] = templates_.equal_range(k.function_name);
    if (first == last) {
      fail(k.name_token, "'" + k.function_name + "' is not a template kernel defined above this instantiation");
    }
    if (i >= t_.size() || !(t_[i].is("<") || t_[i].is("("))) fail(i, "expected the template arguments of '" + k.function_name + "'");
    std::size_t j = i;
    const bool deduced = t_[i].is("(");
    const std::vector<std::vector<std::size_t>> given = deduced ? std::vector<std::vector<std::size_t>>{} : explicit_arguments(i, &j);
    // The first template of that name (in source order) whose parameters the arguments fit.
    const ParsedKernel* found = nullptr;
    std::vector<std::vector<std::size_t>> args;
    std::string problem;
    for (auto it = first; it != last && !found; ++it) {
      std::string why;
      args = given;
      bool fits = !deduced || deduce(it->second, i, args, &why);
      const std::size_t written = args.size();
      fits = fits && fill_defaults(it->second, args, &why);
      if (fits) {
        found = &it->second;
        k.explicit_arguments = written;
      } else if (problem.empty()) {
        problem = why;
      }
    }
    if (!found) fail(i, problem);
    const ParsedKernel& tmpl = *found;
    const auto& names = template_names_.at(tmpl.keyword_token);
    const std::size_t end = [&] {
      for (std::size_t e = j; e < t_.size(); ++e)
        if (t_[e].is(";")) return e;
      fail(j, "expected ';' after the template instantiation");
    }();
    k.instantiation = true;
    k.declaration_begin = template_token;
    k.declaration_end = end;
    k.body_open = tmpl.body_open;
    k.body_close = tmpl.body_close;
    for (std::size_t a = 0; a < names.size(); ++a) k.template_arguments.emplace_back(names[a], args[a]);
    if (k.info.name == k.function_name) {
      fail(k.name_token, "a template kernel instantiation needs [[host_name(\"name\")]] to be callable");
    }
    // The template's parameters with its arguments substituted.
    k.params = tmpl.params;
    k.info.params.clear();
    for (auto& p : k.params) {
      std::string type_name;
      for (const auto& [name, tokens] : k.template_arguments) {
        if (p.info.type_name != name) continue;
        for (std::size_t t : tokens) type_name += (type_name.empty() ? "" : " ") + t_[t].text;
      }
      if (!type_name.empty()) {
        p.info.type_name = type_name;
        classify_type(type_name, &p.info.scalar, &p.info.vector_width);
      }
      k.info.params.push_back(p.info);
    }
    if (!k.info.declared_max_threads) k.info.declared_max_threads = tmpl.info.declared_max_threads;
    return Kind::instantiation;
  }

  // By the template kernel's keyword_token: its parameters' names and default arguments' tokens.
  std::map<std::size_t, std::vector<std::string>> template_names_;
  std::map<std::size_t, std::vector<std::vector<std::size_t>>> template_defaults_;

  void parse_params(std::size_t begin, std::size_t end, ParsedKernel& k, const std::vector<std::string>& template_names) {
    template_names_[k.keyword_token] = template_names;
    std::size_t piece = begin;
    int depth = 0;
    for (std::size_t i = begin; i <= end; ++i) {
      if (i == end || (depth == 0 && t_[i].is(","))) {
        if (i > piece) parse_param(piece, i, k);
        else if (i != end || !k.params.empty()) fail(i, "empty parameter");
        piece = i + 1;
        continue;
      }
      const std::string& s = t_[i].text;
      if (s == "(" || s == "[" || s == "<" || s == "{") ++depth;
      else if (s == ")" || s == "]" || s == ">" || s == "}") --depth;
      else if (s == ">>") depth -= 2;
    }
    if (k.params.size() == 1 && k.params[0].type_tokens.empty()) k.params.clear();  // f(void)
    assign_implicit_indices(k);
  }

  void parse_param(std::size_t begin, std::size_t end, ParsedKernel& k) {
    ParsedParam p;
    std::vector<Attribute> attrs;
    std::vector<std::size_t> rest;
    for (std::size_t i = begin; i < end;) {
      if (t_[i].is("[") && i + 1 < end && t_[i + 1].is("[")) {
        i = parse_attributes(i, attrs);
      } else if (t_[i].is_identifier("coherent") && i + 3 < end && t_[i + 1].is("(") && t_[i + 3].is(")")) {
        i += 4;  // `coherent(system) device uint*`: no part of the type here (translator.cpp)
      } else {
        rest.push_back(i++);
      }
    }
    if (rest.size() == 1 && t_[rest[0]].is_identifier("void")) {
      k.params.push_back(p);  // (void): removed by the caller
      return;
    }
    // An array parameter (`constant const int64_t strides[3]`, as MLX writes) is a pointer.
    while (rest.size() >= 3 && t_[rest.back()].is("]")) {
      std::size_t open = rest.size() - 1;
      while (open > 0 && !t_[rest[open]].is("[")) --open;
      if (open == 0) break;
      rest.resize(open);
      p.array = true;
    }
    if (rest.empty() || t_[rest.back()].kind != TokenKind::identifier) {
      fail(rest.empty() ? begin : rest.back(), "every kernel parameter needs a name");
    }
    if (rest.size() < 2) fail(rest.back(), "kernel parameter '" + t_[rest.back()].text + "' has no type");
    p.name_token = rest.back();
    rest.pop_back();
    p.type_tokens = rest;
    ParamInfo& info = p.info;
    info.position = static_cast<int>(k.params.size());
    info.name = t_[p.name_token].text;
    info.line = t_[p.name_token].line;
    info.column = t_[p.name_token].column;

    bool pointer = false, reference = false;
    std::string type_name;
    for (std::size_t idx : rest) {
      const Token& tok = t_[idx];
      if (tok.is("*")) pointer = true;
      else if (tok.is("&")) reference = true;
      else if (tok.is("&&")) fail(idx, "rvalue references are not valid kernel parameters");
      else if (tok.is_identifier("const")) info.is_const = true;
      else if (tok.is_identifier("volatile") || tok.is_identifier("restrict") || tok.is_identifier("__restrict")) continue;
      else if (tok.is_identifier("device")) info.address_space = AddressSpace::device;
      else if (tok.is_identifier("constant")) info.address_space = AddressSpace::constant, info.is_const = true;
      else if (tok.is_identifier("threadgroup")) info.address_space = AddressSpace::threadgroup;
      else if (tok.is_identifier("thread")) info.address_space = AddressSpace::thread;
      else if (tok.is_identifier("metal") && idx + 1 < end && t_[idx + 1].is("::")) continue;
      else if (tok.is("::") && idx > 0 && t_[idx - 1].is_identifier("metal")) continue;
      else type_name += (type_name.empty() || tok.kind != TokenKind::identifier || type_name.back() == ':' ? "" : " ") + tok.text;
    }
    if (p.array) pointer = true;
    info.type_name = type_name;
    classify_type(resolve_alias(type_name), &info.scalar, &info.vector_width);

    const Attribute* binding = nullptr;
    for (const auto& a : attrs) {
      const Builtin b = builtin_from_attribute(a.name);
      if (b != Builtin::none) {
        info.kind = ParamKind::builtin;
        info.builtin = b;
        info.builtin_width = info.vector_width;
        if (info.scalar != ScalarType::u32 && info.scalar != ScalarType::u16 && info.scalar != ScalarType::i32 &&
            info.scalar != ScalarType::i16) {
          fail(p.name_token, "[[" + a.name + "]] must be declared uint, ushort or a vector of them");
        }
        binding = &a;
      } else if (a.name == "buffer" || a.name == "threadgroup") {
        if (a.args.size() == 1 && !a.args[0].empty() &&
            !std::all_of(a.args[0].begin(), a.args[0].end(), [](char c) { return c >= '0' && c <= '9'; })) {
          // An enum constant or constant expression, as in Apple's samples: the compiler evaluates it.
          info.binding = kDeferredBinding;
          p.binding_expression = a.args[0];
        } else {
          info.binding = integer_argument(a);
        }
        binding = &a;
        if (a.name == "threadgroup") info.kind = ParamKind::threadgroup_memory;
      } else if (a.name == "texture" || a.name == "sampler") {
        info.binding = integer_argument(a);
        info.kind = a.name == "texture" ? ParamKind::texture : ParamKind::sampler;
        binding = &a;
      } else if (a.name == "function_constant") {
        // The bool constant that decides whether the parameter exists (msl/parse/function_constants.hpp).
        if (a.args.size() == 1) info.function_constant = a.args[0];
      } else if (a.name == "stage_in" || a.name == "visible_function_table" ||
                 a.name == "intersection_function_table" || a.name == "instance_acceleration_structure") {
        fail(a.token, "[[" + a.name + "]] parameters are not supported by the CPU backend yet");
      } else if (a.name.find("thread") != std::string::npos || a.name.find("simd") != std::string::npos ||
                 a.name.find("grid") != std::string::npos || a.name.find("quad") != std::string::npos) {
        fail(a.token, "unknown or unsupported kernel attribute [[" + a.name + "]]");
      }
      // Other attributes (e.g. [[raster_order_group]] does not apply to kernels) are ignored.
    }
    if (const std::string problem = classify_resource_param(resolve_alias(info.type_name), binding != nullptr, info);
        !problem.empty())
      fail(p.name_token, problem);
    if (info.kind == ParamKind::texture || info.kind == ParamKind::sampler) {
      k.params.push_back(std::move(p));
      return;
    }
    if (info.kind != ParamKind::builtin && info.kind != ParamKind::threadgroup_memory) {
      if (info.address_space == AddressSpace::threadgroup) {
        info.kind = ParamKind::threadgroup_memory;
      } else if (pointer) {
        info.kind = ParamKind::buffer;
        if (info.address_space != AddressSpace::device && info.address_space != AddressSpace::constant) {
          fail(p.name_token, "kernel pointer parameter '" + info.name + "' must point to device or constant memory");
        }
      } else if (reference) {
        info.kind = ParamKind::reference;
        if (info.address_space != AddressSpace::device && info.address_space != AddressSpace::constant) {
          fail(p.name_token, "kernel reference parameter '" + info.name + "' must refer to device or constant memory");
        }
      } else {
        info.kind = ParamKind::value;
        info.is_const = true;
      }
      if (!binding && info.kind == ParamKind::value) {
        fail(p.name_token, "kernel parameter '" + info.name + "' needs an attribute such as [[buffer(n)]] or [[thread_position_in_grid]]");
      }
    }
    if (info.kind == ParamKind::threadgroup_memory && !pointer) {
      fail(p.name_token, "threadgroup parameter '" + info.name + "' must be a pointer");
    }
    k.params.push_back(std::move(p));
  }

  std::vector<FunctionConstantDecl> parse_function_constants() const {
    std::vector<FunctionConstantDecl> out;
    std::set<int> indices;
    for (std::size_t i = 0; i + 2 < t_.size(); ++i) {
      if (!(t_[i].is("[") && t_[i + 1].is("[") && t_[i + 2].is_identifier("function_constant"))) continue;
      std::vector<Attribute> attrs;
      parse_attributes(i, attrs);
      FunctionConstantDecl c;
      c.attribute_token = i;
      c.index = integer_argument(attrs.front());
      if (i == 0 || t_[i - 1].kind != TokenKind::identifier) fail(i, "[[function_constant]] must follow a constant's name");
      c.name = t_[i - 1].text;
      std::size_t j = i - 1;
      while (j > 0 && !t_[j].is_identifier("constant") && !t_[j].is(";") && !t_[j].is("}") && !t_[j].is("{")) --j;
      if (!t_[j].is_identifier("constant")) fail(i - 1, "a function constant is declared `constant T name [[function_constant(i)]];`");
      c.constant_token = j;
      std::string type_name;
      for (std::size_t k = j + 1; k + 1 < i; ++k) {
        if (t_[k].is_identifier("const") || t_[k].is_identifier("constexpr")) continue;  // MLX: `static constant constexpr const`
        c.type_tokens.push_back(k);
        type_name += (type_name.empty() ? "" : " ") + t_[k].text;
      }
      c.type_name = type_name;
      classify_type(type_name, &c.scalar, &c.vector_width);
      if (c.scalar == ScalarType::unknown || c.vector_width != 1) {
        fail(i - 1, "function constant '" + c.name + "' must have a scalar type (bool, int, uint, float, half, …)");
      }
      if (!indices.insert(c.index).second) fail(i, "function constant index " + std::to_string(c.index) + " is used twice");
      out.push_back(std::move(c));
    }
    return out;
  }

  // Parameters without [[buffer(n)]] / [[threadgroup(n)]] get the lowest free index, in order
  // (later, when some index is an expression only the compiler can evaluate).
  void assign_implicit_indices(ParsedKernel& k) {
    for (const auto& p : k.params) k.info.params.push_back(p.info);
    for (const auto& p : k.info.params)
      if (p.binding == kDeferredBinding) return;
    try {
      finalize_bindings(k.info);
    } catch (const CompileError&) {
      for (const auto& p : k.params) {
        for (const auto& q : k.params) {
          if (&p != &q && p.info.binding >= 0 && p.info.binding == q.info.binding &&
              binding_table(p.info.kind) == binding_table(q.info.kind) &&
              p.info.kind != ParamKind::builtin && q.info.kind != ParamKind::builtin)
            fail(q.name_token, std::string("index ") + std::to_string(q.info.binding) + " is bound twice in kernel '" +
                                   k.info.name + "'");
        }
      }
      throw;
    }
    for (std::size_t i = 0; i < k.params.size(); ++i) k.params[i].info.binding = k.info.params[i].binding;
  }
};

}  // namespace


void finalize_bindings(KernelInfo& kernel) {
  std::set<int> used_tables[4];
  for (const auto& p : kernel.params) {
    if (p.binding < 0 || p.kind == ParamKind::builtin) continue;
    auto& used = used_tables[binding_table(p.kind)];
    if (!used.insert(p.binding).second) {
      throw CompileError("source.metal:" + std::to_string(p.line) + ":" + std::to_string(p.column) + ": error: index " +
                             std::to_string(p.binding) + " is bound twice in kernel '" + kernel.name + "'",
                         "", p.line, p.column);
    }
  }
  for (auto& p : kernel.params) {
    if (p.binding >= 0 || p.kind == ParamKind::builtin) continue;
    auto& used = used_tables[binding_table(p.kind)];
    int next = 0;
    while (used.count(next)) ++next;
    p.binding = next;
    used.insert(next);
  }
  // Metal's argument tables (msl_rules.hpp): an index given by an expression, or given
  // implicitly to the 32nd buffer, is checked here once it is known.
  for (const auto& p : kernel.params) {
    if (p.kind == ParamKind::builtin) continue;
    const bool threadgroup = p.kind == ParamKind::threadgroup_memory;
    const int limit = threadgroup ? kMaxThreadgroupIndex : kMaxBufferIndex;
    if (p.binding > limit) {
      throw CompileError("source.metal:" + std::to_string(p.line) + ":" + std::to_string(p.column) + ": error: '" +
                             p.name + "' is bound to index " + std::to_string(p.binding) + ", but Metal's " +
                             (threadgroup ? "threadgroup memory" : "buffer") + " argument table has indices 0 to " +
                             std::to_string(limit) + " [MSL rule: argument indices within Metal's limits]",
                         "", p.line, p.column);
    }
  }
}

void classify_type(const std::string& type_name, ScalarType* scalar, int* vector_width) {
  std::string base = type_name;
  if (base.rfind("packed_", 0) == 0) base = base.substr(7);
  *vector_width = 1;
  *scalar = scalar_type_from_name(base);
  if (*scalar == ScalarType::unknown && !base.empty() && base.back() >= '2' && base.back() <= '4') {
    *scalar = scalar_type_from_name(base.substr(0, base.size() - 1));
    if (*scalar != ScalarType::unknown) *vector_width = base.back() - '0';
  }
}

ParsedSource parse_source(const std::vector<Token>& tokens, const std::string& source) {
  return SignatureParser(tokens, source).run();
}

}  // namespace metalcall::msl
