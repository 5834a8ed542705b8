// The kernel-signature parser (reflection): finds the kernel functions and function
// constants of a token stream and parses their signatures into the reflection table
// (DESIGN.md §3), keeping token positions for the translator.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "metalcall/reflection.hpp"
#include "msl/lex/lexer.hpp"
#include "msl/errors/source_errors.hpp"  // error_at(): the CompileErrors this parser throws

namespace metalcall::msl {

/** ParamInfo::binding of an index given by an expression (an enum constant, …): the
    backend's compiler evaluates it, then finalize_bindings() completes the table. */
constexpr int kDeferredBinding = -2;

struct ParsedParam {
  ParamInfo info;
  std::string binding_expression;  // the [[buffer(…)]] argument when not an integer literal
  std::vector<std::size_t> type_tokens;  // the declared type, qualifiers included
  // The type as written where type_tokens is an alias's (`P y` of `typedef device float* P`:
  // type_tokens are `device float *`, in the typedef); else empty.
  std::vector<std::size_t> spelled_tokens;
  std::size_t name_token = 0;
  bool array = false;  // declared `constant int64_t strides[3]`: a pointer (type_tokens lack the '*')
};

struct ParsedKernel {
  KernelInfo info;
  std::size_t keyword_token = 0;  // `kernel` (or the `[[` of [[kernel]])
  std::size_t name_token = 0;
  std::size_t body_open = 0, body_close = 0;  // the braces of the body (of the template, for instantiations)
  std::vector<ParsedParam> params;
  // A `template [[host_name("x")]] kernel void f<float>(...);` instantiation:
  // its declaration's tokens, and the template's parameters → argument tokens.
  bool instantiation = false;
  std::size_t declaration_begin = 0, declaration_end = 0;  // `template` … `;`
  std::string function_name;  // the C++ name to call (the template's for instantiations)
  std::vector<std::pair<std::string, std::vector<std::size_t>>> template_arguments;
  // How many of them the instantiation wrote (or deduction found): the call passes those
  // and leaves the defaults to C++, which evaluates them in the template's scope.
  std::size_t explicit_arguments = 0;
  // [[max_total_threads_per_threadgroup(x)]] whose x is no integer expression by itself (a
  // template's `WM * WN * 32`, a named constant): its text, resolved per instantiation.
  std::string max_threads_text;
};

/** A program-scope `constant T name [[function_constant(i)]];`. */
struct FunctionConstantDecl {
  std::string name;
  int index = 0;
  std::vector<std::size_t> type_tokens;
  ScalarType scalar = ScalarType::unknown;
  int vector_width = 1;
  std::string type_name;
  std::size_t constant_token = 0;   // the `constant` keyword
  std::size_t attribute_token = 0;  // the first '[' of the attribute
};

struct ParsedSource {
  std::vector<ParsedKernel> kernels;         // callable kernels, instantiations included
  std::vector<std::size_t> kernel_keywords;  // every `kernel` keyword, templates included
  std::vector<FunctionConstantDecl> function_constants;
};

/** The kernels and function constants of `tokens`. Throws CompileError for malformed ones. */
ParsedSource parse_source(const std::vector<Token>& tokens, const std::string& source);

/**
 * Gives parameters without an index the lowest free one (in order), once every
 * explicit index is known; throws CompileError if an index is bound twice.
 */
void finalize_bindings(KernelInfo& kernel);

/** Component type and width of an MSL type name ("float4" → f32, 4). */
void classify_type(const std::string& type_name, ScalarType* scalar, int* vector_width);
// A buffer parameter's element: classify_type's, or an atomic type's value type (`atomic_uint`,
// `atomic<float>`: the scalar its array must hold).
void classify_element_type(const std::string& type_name, ScalarType* scalar, int* vector_width);

}  // namespace metalcall::msl
