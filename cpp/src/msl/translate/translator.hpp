// MSL → host C++ (CPU backend) and MSL → CUDA C++ (CUDA backend). The output keeps
// the user's line structure, so the compiler's line numbers are the user's; columns
// are mapped back through a SourceMap.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "metalcall/reflection.hpp"

namespace metalcall::msl {

/** Output columns → the user's columns, per user line. */
class SourceMap {
 public:
  void add(int line, int out_column, int user_column);
  /** The user's column for a compiler column on `line` (the token that contains it). */
  int user_column(int line, int out_column) const;

 private:
  std::map<int, std::vector<std::pair<int, int>>> lines_;  // sorted by out_column
};

struct TranslatedKernel {
  KernelInfo info;         // element sizes still 0: read from the layout symbol
  bool uses_fibers = false;  // barriers or SIMD-group functions: threads run as fibers
  bool runs_regions = false;  // barriers only, as loops over the threads between them (barrier_regions.hpp)
  std::string entry_symbol;
  std::string layout_symbol;
};

/** A [[function_constant(i)]] the source declares. */
struct FunctionConstantInfo {
  std::string name;
  int index = 0;
  ScalarType scalar = ScalarType::unknown;
  std::string type_name;
  int vector_width = 1;  // 2 to 4 for a vector constant (ushort2, float4 ...)
};

struct Translation {
  std::string code;  // a complete C++17 translation unit
  std::vector<TranslatedKernel> kernels;
  std::vector<FunctionConstantInfo> function_constants;
  SourceMap map;
};

/**
 * C++ expressions for function constants, by index; a missing index is undefined. A vector
 * constant's entry is its components' expressions, comma-separated (the translation writes the
 * vector's constructor around them, in the target's spelling of the type).
 */
using ConstantValues = std::map<int, std::string>;

/** The name the user's source has in compiler messages. */
inline const char* kSourceName = "source.metal";

struct TranslateOptions {
  /** The prelude's options (defines named METALCALL_*), #defined ahead of the prelude. */
  std::vector<std::pair<std::string, std::string>> defines;
  ConstantValues constants;  // function constant values, by index
  bool checked = false;      // bounds-checked pointers (checked mode)
  /** Apple's predefined macros (__METAL_VERSION__ …), #defined after the prelude for code that names them. */
  std::vector<std::pair<std::string, std::string>> predefined = {{"__METAL_VERSION__", "320"}, {"__METAL__", "1"},
                                                                 {"__HAVE_BFLOAT__", "1"}};
  /** The source after the preprocessor, with linemarkers; null when not preprocessed. */
  const std::string* preprocessed = nullptr;
  /**
   * Empty: every kernel gets an entry point. Otherwise only the kernels named here do
   * (a per-kernel module, as Metal specialises one function), and the bodies of the
   * other kernels are left out where nothing else names them. Translation::kernels
   * then lists only these; their symbols keep the whole file's numbering.
   */
  std::vector<std::string> only_kernels;
};

/** Translates for the CPU backend. Throws CompileError at the user's line and column. */
Translation translate_for_cpu(const std::string& source, const TranslateOptions& options = {});

/**
 * Translates for the CUDA backend (NVRTC with -default-device): the same renames
 * as for the CPU, threadgroup storage as __shared__, program-scope constant data
 * as __device__ const, and one `extern "C" __global__` entry point per kernel
 * taking its own parameter block (msl/targets/cuda_abi.hpp); layouts in __device__ tables.
 */
Translation translate_for_cuda(const std::string& source, const TranslateOptions& options = {});

/** Increase when the translator's output changes, so cached binaries are rebuilt. */
constexpr int kTranslatorVersion = 33;

}  // namespace metalcall::msl
