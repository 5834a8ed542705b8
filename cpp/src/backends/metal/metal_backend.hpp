// Private to the Metal backend: what its files share. Plain C++ (no Objective-C),
// so the logic that needs no GPU — log parsing, language versions, constant packing,
// the device order — builds and is tested on any machine (tools/metal_check/logic_test.cpp).
// Objective-C objects cross this header only as `void*` handles; the .mm that made an
// object owns it (an ARC member behind a pointer to an implementation, or a reference
// taken with __bridge_retained and given back with __bridge_transfer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backends/metal_plan/function_constants.hpp"
#include "backends/metal_plan/library_reflection.hpp"
#include "backends/metal_plan/metal_resources.hpp"
#include "backends/metal_plan/plan.hpp"
#include "core/backend.hpp"
#include "metalcall/argument.hpp"
#include "metalcall/device.hpp"
#include "metalcall/errors.hpp"
#include "metalcall/reflection.hpp"
#include "msl/errors/diagnostics.hpp"

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

/** An MTLBuffer in shared storage: host and GPU see the same memory. */
class MetalBufferStorage final : public PlanBufferStorage {
 public:
  /** Takes over one reference to an id<MTLBuffer> (__bridge_retained); `contents` is its memory. */
  MetalBufferStorage(void* retained_buffer, void* contents, std::size_t nbytes, std::uint64_t registry_id);
  ~MetalBufferStorage() override;  // metal_device.mm: releases the buffer
  MetalBufferStorage(const MetalBufferStorage&) = delete;
  MetalBufferStorage& operator=(const MetalBufferStorage&) = delete;

  /** Borrowed id<MTLBuffer>; alive as long as this storage. */
  void* buffer() const { return buffer_; }

 private:
  void* buffer_;
};

/** A pipeline and the table that says how to bind it. */
class MetalProgram final : public PlanProgram {
 public:
  /** Takes over one reference to an id<MTLComputePipelineState> (__bridge_retained). */
  MetalProgram(KernelInfo info, void* retained_pipeline, std::uint64_t registry_id,
               std::size_t static_threadgroup_memory);
  ~MetalProgram() override;  // metal_compiler.mm: releases the pipeline
  MetalProgram(const MetalProgram&) = delete;
  MetalProgram& operator=(const MetalProgram&) = delete;

  /** Borrowed id<MTLComputePipelineState>; alive as long as this program. */
  void* pipeline() const { return pipeline_; }

 private:
  void* pipeline_;
};

/**
 * A device's queue (metal_queue.mm): one MTLCommandQueue; each plan (backends/metal_plan) is
 * one command buffer, encoded step by step, whose completion handler copies staged host
 * memory back, records the GPU time and finishes the Completion (an ExecutionError when the
 * GPU failed).
 */
class MetalQueue {
 public:
  /** `device` is a borrowed id<MTLDevice> described by `info`; throws DeviceError without a queue. */
  MetalQueue(void* device, const DeviceInfo& info);
  ~MetalQueue();  // waits for the work in flight
  MetalQueue(const MetalQueue&) = delete;
  MetalQueue& operator=(const MetalQueue&) = delete;

  /** Issues the Metal calls `plan` lists and commits; `completion` finishes when the GPU is done. */
  void submit(Plan&& plan, const std::shared_ptr<CompletionState>& completion);
  /** Waits until every submitted command buffer has completed. */
  void synchronize();

 private:
  class Impl;  // Objective-C members, in metal_queue.mm
  std::unique_ptr<Impl> impl_;
};

/** Compiles MSL on `device` (a borrowed id<MTLDevice> of `registry_id`); throws CompileError. */
std::shared_ptr<BackendLibrary> compile_library(void* device, std::uint64_t registry_id, const std::string& source,
                                                const CompileOptions& options);
/** Loads a .metallib image on `device`; throws CompileError. */
std::shared_ptr<BackendLibrary> load_library(void* device, std::uint64_t registry_id,
                                             const std::vector<std::uint8_t>& bytes);

// ---- Textures and samplers (metal_texture.mm) ---------------------------------------

/** minimumLinearTextureAlignmentForPixelFormat: of `device` (a borrowed id<MTLDevice>). */
std::size_t linear_texture_alignment(void* device, const PixelFormat& format);
/**
 * The MTLTexture `texture` describes, taken with __bridge_retained: over `buffer` (an
 * id<MTLBuffer>) or new in private storage on `device`. Throws Error when Metal makes none.
 */
void* make_texture(void* device, const PlanTexture& texture, void* buffer);
/** A new MTLSamplerState of `device` for `sampler`, taken with __bridge_retained. */
void* make_sampler_state(void* device, const Sampler& sampler);

// ---- Plain C++ helpers (metal_support.cpp) -----------------------------------------

/** "3.1" -> {3, 1}; throws CompileError for anything else. */
std::pair<int, int> parse_language_version(const std::string& text);

/**
 * __METAL_VERSION__ as Apple's compiler defines it for an MTLLanguageVersion value
 * ((major << 16) + minor): 310 for 3.1. The front end preprocesses with it (P2.1 item 1).
 */
int metal_version_macro(std::uint64_t language_version);

/**
 * The diagnostics of a Metal compiler log ("program_source:L:C: error: …", clang's
 * format), with the user's source named msl::kSourceName as the other backends name it.
 */
std::vector<msl::Diagnostic> parse_compile_log(const std::string& log);

/**
 * The CompileError for a failed newLibraryWithSource, located in the user's source as on
 * the other backends (msl::compile_error); `what_failed` starts the message when the log
 * names no position.
 */
CompileError compile_error_from_log(const std::string& log, const std::string& source, const std::string& what_failed);


/**
 * The specialisation of kernel `kernel` for the values `given` (metal_plan's specialisation):
 * `used` are Metal's constants of its function, to which the source's other declared constants
 * (`declared`) are added; values are matched as every backend matches them (msl::match_constants:
 * by name or index; unknown or repeated ones refused).
 */
Specialisation specialisation(const std::string& kernel, std::vector<FunctionConstantSlot> used,
                              const std::vector<FunctionConstantSlot>& declared, const std::vector<FunctionConstant>& given);

/** What a GPU says of itself that decides which one index 0 opens. */
struct GpuTraits {
  bool low_power = false;  // isLowPower: an integrated GPU of a Mac with two
  bool removable = false;  // isRemovable: an external GPU
};
/**
 * The order devices are numbered in: first the GPU MTLCreateSystemDefaultDevice would pick (the
 * built-in high-power one), without calling it, since that call switches a dual-GPU Mac to its
 * discrete GPU for the whole process (P2.1 item 9); then the others in MTLCopyAllDevices' order.
 */
std::vector<std::size_t> device_order(const std::vector<GpuTraits>& gpus);

/** A C string from Foundation (UTF8String may return NULL) as std::string. */
inline std::string from_utf8(const char* text) { return text ? std::string(text) : std::string(); }

}  // namespace metalcall::metal
