// Private to the Metal backend: what its files share. Plain C++ (no Objective-C),
// so the logic that needs no GPU — log parsing, reflection merging, constant packing,
// no-copy decisions — builds and is tested on any machine (tools/metal_check/logic_test.cpp).
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
class MetalBufferStorage final : public BufferStorage {
 public:
  /** Takes over one reference to an id<MTLBuffer> (__bridge_retained); `contents` is its memory. */
  MetalBufferStorage(void* retained_buffer, void* contents, std::size_t nbytes, std::uint64_t registry_id);
  ~MetalBufferStorage() override;  // metal_device.mm: releases the buffer
  MetalBufferStorage(const MetalBufferStorage&) = delete;
  MetalBufferStorage& operator=(const MetalBufferStorage&) = delete;

  /** Borrowed id<MTLBuffer>; alive as long as this storage. */
  void* buffer() const { return buffer_; }
  /** The registryID of the device it belongs to. */
  std::uint64_t registry_id() const { return registry_id_; }

 private:
  void* buffer_;
  std::uint64_t registry_id_;
};

/** A pipeline and the table that says how to bind it. */
class MetalProgram final : public Program {
 public:
  /** Takes over one reference to an id<MTLComputePipelineState> (__bridge_retained). */
  MetalProgram(KernelInfo info, void* retained_pipeline, std::size_t static_threadgroup_memory);
  ~MetalProgram() override;  // metal_compiler.mm: releases the pipeline
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

/**
 * A device's queue (metal_queue.mm): one MTLCommandQueue; each submission is one command
 * buffer whose completion handler copies staged host memory back, records the GPU time
 * and finishes the Completion (an ExecutionError when the GPU failed).
 */
class MetalQueue {
 public:
  /** `device` is a borrowed id<MTLDevice> described by `info`; throws DeviceError without a queue. */
  MetalQueue(void* device, const DeviceInfo& info);
  ~MetalQueue();  // waits for the work in flight
  MetalQueue(const MetalQueue&) = delete;
  MetalQueue& operator=(const MetalQueue&) = delete;

  /** Encodes `commands` into one command buffer and commits it; `completion` finishes when the GPU is done. */
  void submit(std::vector<DispatchCommand>&& commands, const std::shared_ptr<CompletionState>& completion);
  /** Waits until every submitted command buffer has completed. */
  void synchronize();

 private:
  class Impl;  // Objective-C members, in metal_queue.mm
  std::unique_ptr<Impl> impl_;
};

/** Compiles MSL on `device` (a borrowed id<MTLDevice>); throws CompileError. */
std::shared_ptr<BackendLibrary> compile_library(void* device, const std::string& source,
                                                const CompileOptions& options);
/** Loads a .metallib image on `device`; throws CompileError. */
std::shared_ptr<BackendLibrary> load_library(void* device, const std::vector<std::uint8_t>& bytes);

// ---- Textures and samplers (metal_texture.mm) ---------------------------------------

/** minimumLinearTextureAlignmentForPixelFormat: of `device` (a borrowed id<MTLDevice>). */
std::size_t linear_texture_alignment(void* device, const PixelFormat& format);

/** The staged textures of one dispatch (see texture_over_buffer) and the copies around it. */
class StagedTextures {
 public:
  /**
   * Makes an MTLTexture on `device` (an id<MTLDevice>) for each texture argument of
   * `command` that is not over its buffer; throws ArgumentError for a texture of another
   * device (`registry_id` is this one's). Nothing is encoded yet.
   */
  StagedTextures(void* device, std::uint64_t registry_id, const DispatchCommand& command, const KernelInfo& kernel);
  ~StagedTextures();
  StagedTextures(const StagedTextures&) = delete;
  StagedTextures& operator=(const StagedTextures&) = delete;

  bool empty() const { return staged_.empty(); }
  /** Encodes on `command_buffer` (an id<MTLCommandBuffer>) one blit pass copying each buffer into its texture. */
  void encode_uploads(void* command_buffer) const;
  /** One blit pass copying back the textures the kernel may write (access::write, read_write). */
  void encode_downloads(void* command_buffer) const;
  /** The id<MTLTexture> staged for argument `arg` of the command, or nullptr when it is over its buffer. */
  void* texture(std::size_t arg) const;

 private:
  struct Staged {
    Texture source;            // its storage (kept alive) and the levels' places in it
    void* buffer = nullptr;    // the storage's id<MTLBuffer>, borrowed
    void* texture = nullptr;   // id<MTLTexture>, taken with __bridge_retained, given back in the destructor
    bool write_back = false;
  };
  void release();  // gives back the textures' references
  static void* make_texture(void* device, const Staged& staged, const ParamInfo& param, const KernelInfo& kernel);

  std::vector<Staged> staged_;                                 // one per texture
  std::vector<std::pair<std::size_t, std::size_t>> bound_;     // (argument, its entry in staged_)
};

/**
 * Binds a texture argument on `encoder` (id<MTLComputeCommandEncoder>): `staged` (an
 * id<MTLTexture> from StagedTextures) when not null, else a linear MTLTexture over its buffer.
 */
void bind_texture(void* encoder, const BoundArgument& arg, const ParamInfo& param, const KernelInfo& kernel,
                  std::uint64_t registry_id, void* staged);
/** Binds a sampler argument: a new MTLSamplerState of `device` on `encoder`. */
void bind_sampler(void* encoder, void* device, const BoundArgument& arg, const ParamInfo& param, const KernelInfo& kernel);

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
 * Bytes of a [[function_constant]] value of `scalar` x `width`: scalars through core's
 * pack_scalar (the rules of kernel arguments), vectors as raw bytes of the exact size.
 * Throws ArgumentError that starts with `label` (what the constant is, for the user).
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

/**
 * Whether Metal makes `descriptor`'s texture over its buffer (a linear texture: 2-D, one mip
 * level), so that kernels use the texels where the host sees them. Every other texture is
 * staged: each call that binds it gets an MTLTexture of its own, filled from the buffer
 * before the call's dispatch and copied back after it where the kernel may write.
 */
bool texture_over_buffer(const TextureDescriptor& descriptor);
/** ArgumentError for a texture beyond Metal's size limits (16384 texels across, 3-D 2048, 2048 slices). */
void check_metal_texture(const TextureDescriptor& descriptor);
/** One blit between a staged texture and its buffer: one 2-D image (a level of a 1-D or 2-D
 * texture, a slice of an array, a cube face) or a 3-D texture's whole level. */
struct ImageCopy {
  std::uint32_t slice = 0, level = 0;
  std::size_t offset = 0, bytes_per_row = 0;
  std::size_t bytes_per_image = 0;  // Apple: the step between a 3-D copy's images, 0 when it copies one
  std::uint32_t width = 1, height = 1, depth = 1;
};
/** The blits that copy every level and slice of a staged texture laid out as `levels` says. */
std::vector<ImageCopy> staged_image_copies(const TextureDescriptor& descriptor, const std::vector<MipLevel>& levels);

inline std::size_t round_up(std::size_t value, std::size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

/** A C string from Foundation (UTF8String may return NULL) as std::string. */
inline std::string from_utf8(const char* text) { return text ? std::string(text) : std::string(); }

}  // namespace metalcall::metal
