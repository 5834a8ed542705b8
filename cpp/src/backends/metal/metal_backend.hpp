// Private to the Metal backend. Plain C++ (no Objective-C), so the logic that needs
// no GPU — log parsing, reflection merging, constant packing, no-copy decisions —
// builds and is tested on any machine (tools/metal_check/logic_test.cpp).
// Objective-C objects cross this header only as borrowed `void*` handles; the .mm
// that made an object owns it (ARC member, or __bridge_retained/__bridge_transfer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/backend.hpp"
#include "metalcall/argument.hpp"
#include "metalcall/device.hpp"
#include "metalcall/errors.hpp"
#include "metalcall/reflection.hpp"

namespace metalcall::metal {

// ---- Objective-C++ seams (defined in the .mm files) -------------------------------

/**
 * Runs body(context) inside an autorelease pool. A C++ exception must not leave an
 * @autoreleasepool block (clang pops the pool only on normal exit), so the exception
 * is caught inside and rethrown once the pool is drained.
 */
void run_in_autorelease_pool(void (*body)(void*), void* context);

template <class F>
void with_autorelease_pool(F&& body) {
  using Body = std::remove_reference_t<F>;
  run_in_autorelease_pool([](void* f) { (*static_cast<Body*>(f))(); },
                          const_cast<void*>(static_cast<const void*>(&body)));
}

/** A pipeline and the table that says how to bind it. */
class MetalProgram final : public Program {
 public:
  /** Takes over one reference to an id<MTLComputePipelineState> (__bridge_retained). */
  MetalProgram(KernelInfo info, void* retained_pipeline, std::size_t static_threadgroup_memory);
  ~MetalProgram() override;  // metal_library.mm: releases the pipeline
  MetalProgram(const MetalProgram&) = delete;
  MetalProgram& operator=(const MetalProgram&) = delete;

  /** Borrowed id<MTLComputePipelineState>; alive as long as this program. */
  void* pipeline() const { return pipeline_; }
  /** Threadgroup memory the kernel declares itself, in bytes. */
  std::size_t static_threadgroup_memory() const { return static_threadgroup_memory_; }

 private:
  void* pipeline_;
  std::size_t static_threadgroup_memory_;
};

/** Compiles MSL on `device` (a borrowed id<MTLDevice>); throws CompileError. */
std::shared_ptr<BackendLibrary> compile_library(void* device, const std::string& source,
                                                const CompileOptions& options);
/** Loads a .metallib image on `device`; throws CompileError. */
std::shared_ptr<BackendLibrary> load_library(void* device, const std::vector<std::uint8_t>& bytes);

// ---- Plain C++ helpers (metal_support.cpp) -----------------------------------------

/** What Metal's pipeline reflection says about one argument, copied out of Objective-C. */
struct BindingInfo {
  enum class Kind { buffer, threadgroup_memory, texture, sampler, other };
  Kind kind = Kind::other;
  int index = -1;
  std::string name;
  bool read_only = false;
  std::size_t data_size = 0;   // bufferDataSize / threadgroupMemoryDataSize
  std::size_t alignment = 0;   // bufferAlignment / threadgroupMemoryAlignment
  ScalarType scalar = ScalarType::unknown;
  int vector_width = 1;
  std::string type_name;       // Metal's name for the data type, for messages
};

/**
 * Fills element_size/element_align of the front end's table from Metal's bindings and
 * checks that both agree on kinds and indices. Throws CompileError on disagreement or
 * on a binding metalcall cannot feed (textures, samplers).
 */
void merge_reflection(KernelInfo& kernel, const std::vector<BindingInfo>& bindings);

/** The table of a kernel known only from Metal (a loaded .metallib): buffers, then threadgroup memory. */
KernelInfo kernel_info_from_bindings(const std::string& name, const std::vector<BindingInfo>& bindings);

/** "3.1" -> {3, 1}; throws CompileError for anything else. */
std::pair<int, int> parse_language_version(const std::string& text);

/** The first error of a Metal compiler log, located in the user's source. */
struct CompileDiagnostic {
  std::string message;  // the compiler's text after "error: "
  int line = 0;         // 1-based; 0 when the log names no position
  int column = 0;
  std::string source_line;
};
CompileDiagnostic parse_compile_log(const std::string& log, const std::string& source);

/** The CompileError for a failed build; `what` says what was being built. */
CompileError compile_error_from_log(const std::string& scope, const std::string& what,
                                    const std::string& log, const std::string& source);

/**
 * Bytes of a [[function_constant]] value of `scalar` x `width`: scalars through core's
 * pack_scalar (the rules of kernel arguments), vectors as raw bytes of the exact size.
 * Throws ArgumentError naming `label`.
 */
std::vector<std::uint8_t> pack_function_constant(ScalarType scalar, int width, const Argument& value,
                                                 const std::string& label);

/**
 * Length to wrap host memory without a copy (newBufferWithBytesNoCopy needs a
 * page-aligned pointer and a whole number of pages), or 0 to copy instead. The length
 * is rounded up only when the allocation behind the pointer (`backing_bytes`, what
 * malloc_size says; 0 when unknown) really covers the rounded length.
 */
std::size_t no_copy_length(const void* data, std::size_t nbytes, std::size_t page_size,
                           std::size_t backing_bytes);

inline std::size_t round_up(std::size_t value, std::size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

/** A C string from Foundation (UTF8String may return NULL) as std::string. */
inline std::string from_utf8(const char* text) { return text ? std::string(text) : std::string(); }

}  // namespace metalcall::metal
