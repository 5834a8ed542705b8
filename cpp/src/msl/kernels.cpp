#include "msl/kernels.hpp"

#include <algorithm>
#include <set>

#include "metalcall/errors.hpp"
#include "msl/reflect.hpp"

namespace metalcall::msl {

std::string source_line(const std::string& source, int line) {
  int current = 1;
  std::size_t start = 0;
  for (std::size_t i = 0; i < source.size() && current < line; ++i) {
    if (source[i] == '\n') {
      ++current;
      start = i + 1;
    }
  }
  if (current != line) return {};
  const std::size_t end = source.find('\n', start);
  std::string text = source.substr(start, end == std::string::npos ? std::string::npos : end - start);
  if (!text.empty() && text.back() == '\r') text.pop_back();
  return text;
}

CompileError error_at(const std::string& source, const Token& token, const std::string& message) {
  const std::string line = source_line(source, token.line);
  std::string caret(token.column > 1 ? token.column - 1 : 0, ' ');
  for (std::size_t k = 0; k < caret.size() && k < line.size(); ++k)
    if (line[k] == '\t') caret[k] = '\t';
  const std::string log = "source.metal:" + std::to_string(token.line) + ":" + std::to_string(token.column) +
                          ": error: " + message + "\n" + line + "\n" + caret + "^";
  return CompileError(log, log, token.line, token.column, line);
}

namespace {

struct Attribute {
  std::string name;
  std::vector<std::string> args;  // raw argument texts, comma separated
  std::size_t token;              // first token of the name
};

class SignatureParser {
 public:
  SignatureParser(const std::vector<Token>& t, const std::string& src) : t_(t), src_(src) {}

  std::vector<ParsedKernel> run() {
    std::vector<ParsedKernel> out;
    for (std::size_t i = 0; i < t_.size(); ++i) {
      if (!starts_kernel(i)) continue;
      out.push_back(parse_kernel(i));
      i = out.back().body_close;
    }
    // MSL: kernel names in a library are unique.
    std::set<std::string> seen;
    for (const auto& k : out) {
      if (!seen.insert(k.info.name).second)
        throw error_at(src_, t_[k.name_token], "redefinition of kernel '" + k.info.name + "'");
    }
    return out;
  }

 private:
  const std::vector<Token>& t_;
  const std::string& src_;

  bool member_access(std::size_t i) const {
    return i > 0 && (t_[i - 1].is(".") || t_[i - 1].is("->") || t_[i - 1].is("::"));
  }

  // `kernel void`, or `[[kernel]] void`.
  bool starts_kernel(std::size_t i) const {
    if (t_[i].is_identifier("kernel") && !member_access(i)) {
      return !(i > 0 && t_[i - 1].is("[") && i + 1 < t_.size() && t_[i + 1].is("]"));
    }
    return i + 4 < t_.size() && t_[i].is("[") && t_[i + 1].is("[") && t_[i + 2].is_identifier("kernel") &&
           t_[i + 3].is("]") && t_[i + 4].is("]");
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

  int integer_argument(const Attribute& a) const {
    if (a.args.size() != 1 || a.args[0].empty() ||
        !std::all_of(a.args[0].begin(), a.args[0].end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        a.args[0].size() > 9) {
      fail(a.token, "[[" + a.name + "(...)]] needs an integer literal index");
    }
    return std::stoi(a.args[0]);
  }

  ParsedKernel parse_kernel(std::size_t start) {
    ParsedKernel k;
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
    if (t_[i].is("[")) i = parse_attributes(i, attrs);
    else ++i;
    if (start > 0 && t_[start - 1].is(">")) {
      fail(start, "template kernels are not supported by the CPU backend yet");
    }
    while (i < t_.size() && t_[i].is("[")) i = parse_attributes(i, attrs);
    if (i >= t_.size() || !t_[i].is_identifier("void")) fail(i, "a kernel function must return void");
    ++i;
    while (i < t_.size() && t_[i].is("[")) i = parse_attributes(i, attrs);
    if (i >= t_.size() || t_[i].kind != TokenKind::identifier) fail(i, "expected the kernel's name");
    k.name_token = i;
    k.info.name = t_[i].text;
    k.info.line = t_[i].line;
    ++i;
    if (i >= t_.size() || !t_[i].is("(")) fail(i, "expected '(' after the kernel's name");
    const std::size_t close = matching(i, "(", ")");
    parse_params(i + 1, close, k);
    i = close + 1;
    while (i < t_.size() && !t_[i].is("{") && !t_[i].is(";")) {
      if (t_[i].is("[")) i = parse_attributes(i, attrs);
      else ++i;
    }
    if (i >= t_.size() || t_[i].is(";")) fail(k.name_token, "kernel '" + k.info.name + "' is declared but not defined");
    k.body_open = i;
    k.body_close = matching(i, "{", "}");
    for (const auto& a : attrs) {
      if (a.name == "max_total_threads_per_threadgroup") k.info.declared_max_threads = integer_argument(a);
    }
    return k;
  }

  void parse_params(std::size_t begin, std::size_t end, ParsedKernel& k) {
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
      } else {
        rest.push_back(i++);
      }
    }
    if (rest.size() == 1 && t_[rest[0]].is_identifier("void")) {
      k.params.push_back(p);  // (void): removed by the caller
      return;
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
    info.type_name = type_name;
    std::string base = type_name;
    if (base.rfind("packed_", 0) == 0) base = base.substr(7);
    info.scalar = scalar_type_from_name(base);
    if (info.scalar == ScalarType::unknown && !base.empty() && base.back() >= '2' && base.back() <= '4') {
      info.scalar = scalar_type_from_name(base.substr(0, base.size() - 1));
      if (info.scalar != ScalarType::unknown) info.vector_width = base.back() - '0';
    }

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
        info.binding = integer_argument(a);
        binding = &a;
        if (a.name == "threadgroup") info.kind = ParamKind::threadgroup_memory;
      } else if (a.name == "texture" || a.name == "sampler" || a.name == "stage_in" || a.name == "visible_function_table" ||
                 a.name == "intersection_function_table" || a.name == "instance_acceleration_structure") {
        fail(a.token, "[[" + a.name + "]] parameters are not supported by the CPU backend yet");
      } else if (a.name.find("thread") != std::string::npos || a.name.find("simd") != std::string::npos ||
                 a.name.find("grid") != std::string::npos || a.name.find("quad") != std::string::npos) {
        fail(a.token, "unknown or unsupported kernel attribute [[" + a.name + "]]");
      }
      // Other attributes (e.g. [[raster_order_group]] does not apply to kernels) are ignored.
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
    if (info.kind == ParamKind::buffer && info.scalar == ScalarType::boolean && info.vector_width == 1) {
      // bool buffers are fine; nothing to check. Kept explicit for readers.
    }
    k.params.push_back(std::move(p));
  }

  // Parameters without [[buffer(n)]] / [[threadgroup(n)]] get the lowest free index, in order.
  void assign_implicit_indices(ParsedKernel& k) {
    std::set<int> used_buffers, used_threadgroups;
    for (const auto& p : k.params) {
      if (p.info.binding < 0) continue;
      auto& used = p.info.kind == ParamKind::threadgroup_memory ? used_threadgroups : used_buffers;
      if (!used.insert(p.info.binding).second) {
        fail(p.name_token, std::string("index ") + std::to_string(p.info.binding) + " is bound twice in kernel '" +
                               k.info.name + "'");
      }
    }
    for (auto& p : k.params) {
      if (p.info.binding >= 0 || p.info.kind == ParamKind::builtin) continue;
      auto& used = p.info.kind == ParamKind::threadgroup_memory ? used_threadgroups : used_buffers;
      int next = 0;
      while (used.count(next)) ++next;
      p.info.binding = next;
      used.insert(next);
    }
    for (const auto& p : k.params) k.info.params.push_back(p.info);
  }
};

}  // namespace

std::vector<ParsedKernel> parse_kernels(const std::vector<Token>& tokens, const std::string& source) {
  return SignatureParser(tokens, source).run();
}

std::vector<KernelInfo> reflect_kernels(const std::string& source) {
  std::vector<KernelInfo> out;
  for (auto& k : parse_kernels(tokenize(source), source)) out.push_back(std::move(k.info));
  return out;
}

}  // namespace metalcall::msl
