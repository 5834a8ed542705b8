// One kernel parameter: its type, address space and attributes, into the reflection table.
#include "msl/parse/signature_walk.hpp"

#include <algorithm>

#include "metalcall/errors.hpp"
#include "msl/analysis/msl_rules.hpp"
#include "msl/lex/token_text.hpp"
#include "msl/parse/builtin_agreement.hpp"
#include "msl/parse/integer_expression.hpp"
#include "msl/parse/resource_params.hpp"
#include "msl/parse/template_deduction.hpp"

namespace metalcall::msl {

namespace {

// Attributes whose value is one number (an index or a count): never a vector.
bool builtin_is_scalar(Builtin b) {
  switch (b) {
    case Builtin::thread_index_in_threadgroup:
    case Builtin::thread_index_in_simdgroup:
    case Builtin::simdgroup_index_in_threadgroup:
    case Builtin::threads_per_simdgroup:
    case Builtin::simdgroups_per_threadgroup:
    case Builtin::thread_execution_width:
    case Builtin::dispatch_simdgroups_per_threadgroup:
    case Builtin::thread_index_in_quadgroup:
    case Builtin::quadgroup_index_in_threadgroup:
    case Builtin::quadgroups_per_threadgroup:
    case Builtin::dispatch_quadgroups_per_threadgroup:
      return true;
    default:
      return false;
  }
}

}  // namespace

void SignatureParser::parse_params(std::size_t begin, std::size_t end, ParsedKernel& k, const std::vector<std::string>& template_names) {
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
  check_builtin_agreement(t_, src_, k.params);
  assign_implicit_indices(k);
}

void SignatureParser::parse_param(std::size_t begin, std::size_t end, ParsedKernel& k) {
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
  // `P y [[buffer(1)]]` of `typedef device float* P;` (or `using`, or an alias template's
  // `cref<float>`): read as the pointer or reference it names. Before 2026-12-05 such a buffer
  // was taken for a value of the pointer's own bytes (8; 32 in checked mode, a checked pointer's
  // base and bounds from the caller's bytes), and a reference alias did not compile.
  std::vector<std::size_t> spelled = rest;
  bool expanded = false;
  for (int hops = 0; hops < 8 && expand_indirect_alias(rest); ++hops) expanded = true;
  if (expanded) p.spelled_tokens = spelled;
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
    else if (tok.is_identifier("volatile") || tok.is_identifier("restrict") || tok.is_identifier("__restrict") ||
             tok.is_identifier("__restrict__"))
      continue;
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
  classify_element_type(resolve_alias(type_name), &info.scalar, &info.vector_width);
  info.matrix_scalar = matrix_component(resolve_alias(type_name));  // `typedef float4x4 M`: float's checks

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
      // The MSL specification's table of kernel input attributes: positions and sizes are
      // ushort/uint or their 2- and 3-vectors, indices and counts a scalar.
      if (builtin_is_scalar(b) && info.vector_width != 1)
        fail(p.name_token, "[[" + a.name + "]] must be declared uint or ushort (a scalar), not '" + info.type_name + "'");
      if (info.vector_width > 3)
        fail(p.name_token, "[[" + a.name + "]] must be declared uint, uint2, uint3 or ushort, ushort2, ushort3, not '" +
                               info.type_name + "'");
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
    } else if (a.name == "stage_in") {
      // A kernel's stage-in data is laid out by the pipeline's stage-input descriptor, which
      // metalcall's calls have no counterpart of.
      fail(a.token, "[[stage_in]] kernel parameters are not supported: metalcall has no stage-input descriptor "
                    "(Metal's MTLStageInputOutputDescriptor); pass the data in a buffer");
    } else if (a.name == "visible_function_table" ||
               a.name == "intersection_function_table" || a.name == "instance_acceleration_structure") {
      fail(a.token, "[[" + a.name + "]] parameters are not supported by the CPU backend yet");
    } else if (a.name.find("thread") != std::string::npos || a.name.find("simd") != std::string::npos ||
               a.name.find("grid") != std::string::npos || a.name.find("quad") != std::string::npos) {
      fail(a.token, "unknown or unsupported kernel attribute [[" + a.name + "]]");
    }
    // Other attributes (e.g. [[raster_order_group]] does not apply to kernels) are ignored.
  }
  // An enum binds as its underlying integer type (not for builtins: MSL declares them uint or ushort).
  if (info.kind != ParamKind::builtin && info.scalar == ScalarType::unknown)
    if (const std::string underlying = enum_underlying(type_name); !underlying.empty())
      classify_element_type(underlying, &info.scalar, &info.vector_width);
  if (const std::string problem = classify_resource_param(
          resolve_alias(info.type_name), binding != nullptr, info,
          [this](const std::string& name) { return resolve_alias(name); });
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
  // `threadgroup T& x` (naga writes each workgroup variable so): the memory holds one T.
  if (info.kind == ParamKind::threadgroup_memory && !pointer && !reference) {
    fail(p.name_token, "threadgroup parameter '" + info.name + "' must be a pointer or a reference");
  }
  k.params.push_back(std::move(p));
}

}  // namespace metalcall::msl
