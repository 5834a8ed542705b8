// Casts to pointer types, and the pointer variables they initialise: written so that their
// accesses tolerate an address below the alignment of what they point to (metal_unaligned.h).
// `reinterpret_cast<constant uchar3*>(bytes + 3 * i)` may point anywhere; Apple GPUs load it,
// CUDA faults. Pointers the kernel is given, and those it derives by arithmetic on them, keep
// plain pointers and their wide loads; so does a cast of a kernel's buffer parameter itself to a
// vector named by its MSL spelling (`(device const uint4*)a`, a GEMM's tile copies), whose
// alignment the call then checks (an ArgumentError when the data is not aligned for it).
#include "msl/translate/translator_walk.hpp"

#include "msl/analysis/call_graph.hpp"

namespace metalcall::msl {

namespace {

bool is_named_cast(const Token& t) {
  return t.is_identifier("reinterpret_cast") || t.is_identifier("static_cast") || t.is_identifier("const_cast");
}

// The end of the initializer that starts after the `=` at `eq`: its `;`, or a top-level `,`.
std::size_t initializer_end(const std::vector<Token>& t, std::size_t eq) {
  int depth = 0;
  for (std::size_t j = eq + 1; j < t.size(); ++j) {
    if (t[j].is("(") || t[j].is("[") || t[j].is("{")) ++depth;
    else if (t[j].is(")") || t[j].is("]") || t[j].is("}")) {
      if (--depth < 0) return j;
    } else if (depth == 0 && (t[j].is(";") || t[j].is(","))) {
      return j;
    }
  }
  return t.size();
}

// The alignment of an MSL vector type spelled by name (`uint4`: 16), or 0.
std::size_t vector_alignment(const std::string& name) {
  static const std::pair<const char*, std::size_t> kScalars[] = {
      {"char", 1}, {"uchar", 1}, {"short", 2}, {"ushort", 2}, {"half", 2}, {"bfloat", 2},
      {"int", 4},  {"uint", 4},  {"float", 4}, {"long", 8},   {"ulong", 8}};
  if (name.size() < 2) return 0;
  const char width = name.back();
  if (width < '2' || width > '4') return 0;
  const std::string scalar = name.substr(0, name.size() - 1);
  for (const auto& [n, size] : kScalars)
    if (scalar == n) return size * (width == '2' ? 2 : 4);
  return 0;
}

// True when the body [open, close] may change the pointer `name` (assign it, step it, take its address).
bool changes_pointer(const std::vector<Token>& t, std::size_t open, std::size_t close, const std::string& name) {
  static const auto& ops = *new std::set<std::string>{"=", "+=", "-=", "++", "--"};
  for (std::size_t j = open + 1; j < close; ++j) {
    if (t[j].kind != TokenKind::identifier || t[j].text != name || t[j - 1].is(".") || t[j - 1].is("->")) continue;
    if (t[j - 1].is("&") || t[j - 1].is("++") || t[j - 1].is("--")) return true;
    if (j + 1 < close && t[j + 1].kind == TokenKind::punct && ops.count(t[j + 1].text)) return true;
  }
  return false;
}

// The top-level items of the parenthesised list opening at `open` (arguments or parameters), as
// [first, end) token ranges; none for `()`.
std::vector<std::pair<std::size_t, std::size_t>> top_level_items(const std::vector<Token>& t, std::size_t open) {
  std::vector<std::pair<std::size_t, std::size_t>> items;
  const std::size_t close = matching(t, open);
  if (close >= t.size() || close == open + 1) return items;
  std::size_t start = open + 1;
  int depth = 0, angles = 0;
  for (std::size_t j = open + 1; j < close; ++j) {
    if (t[j].is("(") || t[j].is("[") || t[j].is("{")) ++depth;
    else if (t[j].is(")") || t[j].is("]") || t[j].is("}")) --depth;
    else if (t[j].is("<") && j > 0 && t[j - 1].kind == TokenKind::identifier && depth == 0) ++angles;
    else if (t[j].is(">") && angles > 0 && depth == 0) --angles;
    else if (t[j].is(",") && depth == 0 && angles == 0) {
      items.emplace_back(start, j);
      start = j + 1;
    }
  }
  items.emplace_back(start, close);
  return items;
}

// The end (one past the last token) of the unary expression starting at `b`: prefix operators,
// then a primary expression (a name, a literal or a parenthesised group) with its postfix
// operators (subscripts, calls, members, ++/--).
std::size_t unary_expression_end(const std::vector<Token>& t, std::size_t b) {
  std::size_t j = b;
  while (j < t.size() && (t[j].is("&") || t[j].is("*") || t[j].is("-") || t[j].is("+") || t[j].is("!") ||
                          t[j].is("~") || t[j].is("++") || t[j].is("--")))
    ++j;
  if (j >= t.size()) return t.size();
  if (t[j].is("(")) {
    j = matching(t, j) + 1;
  } else if (t[j].kind == TokenKind::identifier || t[j].kind == TokenKind::number) {
    ++j;
    while (j + 1 < t.size() && t[j].is("::") && t[j + 1].kind == TokenKind::identifier) j += 2;
  } else {
    return t.size();
  }
  while (j < t.size()) {
    if (t[j].is("[") || t[j].is("(")) j = matching(t, j) + 1;
    else if ((t[j].is(".") || t[j].is("->")) && j + 1 < t.size() && t[j + 1].kind == TokenKind::identifier) j += 2;
    else if (t[j].is("++") || t[j].is("--")) ++j;
    else break;
  }
  return j;
}

// Item types of one or two bytes, spelled by name (`uchar`, `half2`): the reads of a value's
// bytes through such a pointer that CUDA miscompiles (see punned_addresses below).
bool small_items(const std::string& element) {
  static const char* const kSmall[] = {"char", "uchar", "short", "ushort", "half", "bfloat", "bool",
                                       "int8_t", "uint8_t", "int16_t", "uint16_t", "signed char",
                                       "unsigned char", "unsigned short"};
  std::string e = element;
  for (const char* q : {"const ", "volatile "})
    for (std::size_t at; (at = e.find(q)) != std::string::npos;) e.erase(at, std::string(q).size());
  while (!e.empty() && e.back() == ' ') e.pop_back();
  if (e.rfind("mtl_", 0) == 0) e.erase(0, 4);  // the translation's spelling of MSL's types (mtl_uchar)
  if (!e.empty() && (e.back() == '2' || e.back() == '3' || e.back() == '4') && e != "int8_t" && e != "uint8_t")
    e.pop_back();
  for (const char* k : kSmall)
    if (e == k) return true;
  return false;
}

// The type parameters of the template that declares the function named at `name`
// (`template <typename T> void f(device T* p)`: T), or none. A parameter whose pointee names one
// keeps its type: metal::mtl_cast_pointer_t<T> would not deduce T (MoltenVK's
// `populateTriIndxsFromTriFan(device T*, constant T*, ...)` given two casts).
std::set<std::string> template_type_parameters(const std::vector<Token>& t, std::size_t name) {
  std::size_t j = name;
  for (int depth = 0; j > 0; --j) {
    const Token& b = t[j - 1];
    if (b.is(")") || b.is("]")) ++depth;
    else if (b.is("(") || b.is("[")) --depth;
    else if (depth == 0 && (b.is(";") || b.is("{") || b.is("}"))) break;
  }
  std::set<std::string> out;
  if (j + 1 >= name || !t[j].is_identifier("template") || !t[j + 1].is("<")) return out;
  int angle = 0;
  for (std::size_t k = j + 1; k + 1 < name; ++k) {
    if (t[k].is("<")) ++angle;
    else if (t[k].is(">") && --angle == 0) break;
    else if (t[k].is(">>") && (angle -= 2) <= 0) break;
    else if (angle == 1 && (t[k].is_identifier("typename") || t[k].is_identifier("class")) &&
             t[k + 1].kind == TokenKind::identifier)
      out.insert(t[k + 1].text);
  }
  return out;
}

}  // namespace

void Translator::launder_punned_addresses() {
  // CUDA: the bytes of a `half` read through a pointer made by a cast of its address
  // (`uchar(((thread ushort*)&h)[0])`): NVVM forwards the value from the f16 register and
  // ptxas truncates that register wrongly (the low byte came back 0 on the H200: 0xB5EC read
  // as 0xB500; docs/design.md, "GPU campaigns so far"). The address goes through an empty asm
  // the optimiser cannot see into, so the value is stored whole and its bytes are loaded from
  // memory. Only casts of an address (`&...`) to pointers of 1- or 2-byte items: wider
  // pointers to thread arrays (tile loads) keep their registers.
  for (std::size_t i = 1; i + 3 < t_.size(); ++i) {
    std::size_t operand = 0, end = 0;
    if (is_named_cast(t_[i]) && t_[i + 1].is("<")) {
      const std::size_t star = address_space_pointer_end(i + 2);
      if (star == std::string::npos || star + 3 >= t_.size() || !t_[star + 1].is(">") || !t_[star + 2].is("(") ||
          !small_items(element_text(i + 2, star)))
        continue;
      operand = star + 3;
      end = matching(t_, star + 2);
    } else if (t_[i].kind == TokenKind::identifier && t_[i - 1].is("(")) {
      const std::size_t star = address_space_pointer_end(i);
      if (star == std::string::npos || !is_pointer_cast(t_, i, star) || !small_items(element_text(i, star))) continue;
      operand = star + 2;
      end = unary_expression_end(t_, operand);
    } else {
      continue;
    }
    if (operand >= t_.size() || !t_[operand].is("&") || end >= t_.size() || end <= operand) continue;
    text_before_[operand] += "metal::mtl_detail::opaque_address(";
    text_before_[end] = ")" + text_before_[end];
  }
}

std::size_t Translator::aligned_parameter_cast(std::size_t first, std::size_t star, std::size_t operand) {
  if (operand + 1 >= t_.size() || t_[operand].kind != TokenKind::identifier) return 0;
  const Token& after = t_[operand + 1];
  // `reinterpret_cast<…>(a)`: the parenthesis closes; `(T*)a`: no postfix continues the operand.
  const bool named = t_[operand - 1].is("(");
  if (named ? !after.is(")")
            : after.is("(") || after.is(".") || after.is("->") || after.is("[") || after.is("::") || after.is("<") ||
                  after.is("++") || after.is("--"))
    return 0;
  std::size_t alignment = 0;
  for (std::size_t j = first; j < star; ++j) {
    if (t_[j].is_identifier("const") || t_[j].is_identifier("volatile") || is_address_space(t_[j]) ||
        t_[j].is_identifier("thread"))
      continue;
    if (alignment || !(alignment = vector_alignment(t_[j].text))) return 0;
  }
  for (const ParsedKernel& k : kernels_) {
    if (first <= k.body_open || first >= k.body_close) continue;
    for (const ParsedParam& p : k.params)
      if (p.info.kind == ParamKind::buffer && t_[p.name_token].text == t_[operand].text &&
          !changes_pointer(t_, k.body_open, k.body_close, t_[operand].text)) {
        std::size_t& required = cast_alignments_[{k.body_open, p.info.name}];
        required = std::max(required, alignment);
        return alignment;
      }
  }
  return 0;
}

void Translator::find_pointer_casts(const std::function<bool(std::size_t)>& touched) {
  std::map<std::size_t, std::pair<std::size_t, std::string>> edits;
  // Text written before the range's first token stays (a loop's stop check before a declaration).
  auto free_range = [&](std::size_t b, std::size_t e) {
    for (std::size_t j = b; j <= e; ++j)
      if (touched(j) || (j > b && text_before_.count(j))) return false;
    return true;
  };
  // Element types that a plain pointer serves as well: volatile ones (the prelude's pointer
  // has no volatile accesses) and deduced ones.
  auto plain = [](const std::string& element) {
    return element.find("volatile") != std::string::npos || element == "auto" || element == "const auto";
  };
  for (std::size_t i = 0; i + 2 < t_.size(); ++i) {
    if (is_named_cast(t_[i]) && t_[i + 1].is("<")) {
      const std::size_t star = address_space_pointer_end(i + 2);
      if (star == std::string::npos || star + 2 >= t_.size() || !t_[star + 1].is(">") || !t_[star + 2].is("("))
        continue;
      const std::string element = element_text(i + 2, star);
      if (plain(element) || !free_range(i, star + 1) || aligned_parameter_cast(i + 2, star, star + 3)) continue;
      const char* function = t_[i].is_identifier("static_cast") ? "mtl_static_pointer" : "mtl_reinterpret_pointer";
      edits[i] = {star + 1, std::string("metal::") + function + "<" + element + ">"};
      i = star + 1;
      continue;
    }
    if (t_[i].kind != TokenKind::identifier || i == 0 || !t_[i - 1].is("(")) continue;
    const std::size_t star = address_space_pointer_end(i);
    if (star == std::string::npos || !is_pointer_cast(t_, i, star)) continue;
    const std::string element = element_text(i, star);
    if (plain(element) || !free_range(i, star) || aligned_parameter_cast(i, star, star + 2)) continue;
    edits[i] = {star, "metal::mtl_cast_pointer_t<" + element + ">"};
    i = star;
  }
  if (edits.empty()) return;

  // Pointer variables initialised from a cast or from such a variable (`q = p + 1`), in the
  // block that declares them: the same pointer type. One declarator only (`T *p = a, *q = b`
  // would make q a pointer to it).
  struct Variable {
    std::string name;
    std::size_t open, close;  // its block
  };
  std::vector<Variable> variables;
  std::set<std::size_t> declared;
  auto mentions_cast = [&](std::size_t b, std::size_t e) {
    for (std::size_t j = b; j < e; ++j) {
      if (edits.count(j) && !declared.count(j)) return true;
      if (t_[j].kind != TokenKind::identifier || after_member_access(j)) continue;
      for (const Variable& v : variables)
        if (v.name == t_[j].text && j > v.open && j < v.close) return true;
    }
    return false;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t i = 1; i + 3 < t_.size(); ++i) {
      if (declared.count(i) || t_[i].kind != TokenKind::identifier) continue;
      const std::size_t star = address_space_pointer_end(i);
      if (star == std::string::npos || !declares_variable(star)) continue;
      std::size_t name = star + 1;
      while (t_[name].is_identifier("const")) ++name;
      if (!t_[name + 1].is("=")) continue;
      const std::size_t end = initializer_end(t_, name + 1);
      if (end >= t_.size() || !t_[end].is(";") || !mentions_cast(name + 2, end)) continue;
      const std::string element = element_text(i, star);
      if (element.find("volatile") != std::string::npos || !free_range(i, star)) continue;
      const std::vector<std::size_t> blocks = enclosing_braces(i);
      if (blocks.empty()) continue;  // program scope: no casts of addresses there
      const bool deduced = element == "auto" || element == "const auto";
      edits[i] = {star, deduced ? "auto" : "metal::mtl_cast_pointer_t<" + element + ">"};
      declared.insert(i);
      variables.push_back({t_[name].text, blocks.front(), matching(t_, blocks.front())});
      changed = true;
      i = star;
    }
    // The parameters a call passes such a pointer to: `scale_into((device float4*)(out + 3), v)`
    // gives scale_into's `device float4* dst` (every declaration of that name and arity) the
    // same type, and dst is such a variable in its body.
    for (std::size_t c = 1; c + 1 < t_.size(); ++c) {
      if (t_[c].kind != TokenKind::identifier || !t_[c + 1].is("(") || after_member_access(c) || t_[c - 1].is("::"))
        continue;
      const std::vector<std::pair<std::size_t, std::size_t>> args = top_level_items(t_, c + 1);
      for (std::size_t k = 0; k < args.size(); ++k) {
        if (!mentions_cast(args[k].first, args[k].second)) continue;
        for (std::size_t d = 0; d + 1 < t_.size(); ++d) {
          if (!t_[d].is_identifier(t_[c].text.c_str()) || !t_[d + 1].is("(") || after_member_access(d)) continue;
          const std::vector<std::pair<std::size_t, std::size_t>> params = top_level_items(t_, d + 1);
          if (params.size() != args.size()) continue;
          const std::size_t first = params[k].first;
          if (declared.count(first)) continue;
          const std::size_t star = address_space_pointer_end(first);
          if (star == std::string::npos || star + 1 >= params[k].second || t_[star + 1].kind != TokenKind::identifier)
            continue;
          const std::string element = element_text(first, star);
          if (element.find("volatile") != std::string::npos || element.find("auto") != std::string::npos ||
              !free_range(first, star))
            continue;
          const std::set<std::string> deduced = template_type_parameters(t_, d);
          bool names_deduced = false;
          for (std::size_t q = first; q < star; ++q) names_deduced = names_deduced || deduced.count(t_[q].text);
          if (names_deduced) continue;
          edits[first] = {star, "metal::mtl_cast_pointer_t<" + element + ">"};
          declared.insert(first);
          const std::size_t close = matching(t_, d + 1);
          std::size_t body = close + 1;
          while (body < t_.size() && t_[body].is_identifier("const")) ++body;
          if (body < t_.size() && t_[body].is("{"))
            variables.push_back({t_[star + 1].text, body, matching(t_, body)});
          changed = true;
        }
      }
    }
  }
  // Where the code wants the element as an object rather than its value: a component or member
  // (`q[i].x = 1`, `&q[i].y`) or its address (`&q[i]`), the plain pointer (metal::mtl_raw): those
  // accesses need only the component's alignment. Whole elements and swizzles keep the checks.
  for (const Variable& v : variables) {
    for (std::size_t j = v.open + 1; j + 3 < v.close; ++j) {
      if (t_[j].kind != TokenKind::identifier || t_[j].text != v.name || after_member_access(j) || !free_range(j, j))
        continue;
      const Token& before = t_[j - 1];
      const bool address = before.is("&") && !(t_[j - 2].kind == TokenKind::identifier ||
                                                t_[j - 2].kind == TokenKind::number || t_[j - 2].is(")") ||
                                                t_[j - 2].is("]"));
      bool component = false;
      if (t_[j + 1].is("[")) {
        const std::size_t close = matching(t_, j + 1);
        std::vector<int> swz;
        component = close + 2 < t_.size() && t_[close + 1].is(".") && t_[close + 2].kind == TokenKind::identifier &&
                    !(t_[close + 2].text.size() > 1 && is_swizzle(t_[close + 2].text, &swz));
      }
      // `reinterpret_cast<ulong>(q)` (SPIRV-Cross's address arithmetic): the address as an integer.
      bool to_integer = before.is("(") && t_[j + 1].is(")") && t_[j - 2].is(">");
      for (std::size_t k = j - 2; to_integer && k > 0 && !t_[k].is("<"); --k) to_integer = !t_[k].is("*");
      if (to_integer) {
        std::size_t open = j - 2;
        while (open > 0 && !t_[open].is("<")) --open;
        to_integer = open > 0 && t_[open - 1].is_identifier("reinterpret_cast");
      }
      if (address || component || to_integer) edits[j] = {j, "metal::mtl_raw(" + v.name + ")"};
    }
  }
  // `auto v = q[i];` would deduce the element's reference class (metal_unaligned.h), whose
  // changes are stored when it goes: v is a copy in MSL. The initializer is taken by value.
  for (const Variable& v : variables) {
    for (std::size_t j = v.open + 1; j + 3 < v.close; ++j) {
      if (!t_[j].is_identifier("auto") || t_[j + 1].kind != TokenKind::identifier || !t_[j + 2].is("=")) continue;
      const std::size_t b = j + 3;
      std::size_t e = b;
      if (t_[b].is("*") && t_[b + 1].is_identifier(v.name.c_str())) e = b + 2;
      else if (t_[b].is_identifier(v.name.c_str()) && t_[b + 1].is("[")) e = matching(t_, b + 1) + 1;
      if (e == b || e >= t_.size() || !(t_[e].is(";") || t_[e].is(",")) || !free_range(b, e)) continue;
      text_before_[b] += "metal::mtl_value(";
      text_before_[e] = ")" + text_before_[e];
    }
  }
  pointer_casts_ = std::move(edits);
}

}  // namespace metalcall::msl
