// A Metal plan: everything the Metal backend decides about one submission (which buffers,
// staging ranges, passes, encoders, blits, dispatch shapes, copy-backs, and their order),
// written in plain C++. The Objective-C++ driver (backends/metal/metal_queue.mm) issues
// exactly the Metal calls a plan lists, one per step; the simulator (backends/metal_sim)
// executes the same plan under Metal's documented rules. The planner (planner.hpp) makes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "backends/metal_plan/metal_resources.hpp"
#include "core/backend.hpp"

namespace metalcall::metal {

/** A pipeline as both drivers hold it: what the planner needs to know of it. */
class PlanProgram : public Program {
 public:
  PlanProgram(KernelInfo info, std::uint64_t registry_id, std::size_t static_threadgroup_memory)
      : Program(std::move(info)), registry_id_(registry_id), static_threadgroup_memory_(static_threadgroup_memory) {}
  /** The registryID of the device it was built on. */
  std::uint64_t registry_id() const { return registry_id_; }
  /** Threadgroup memory the kernel declares itself, in bytes (staticThreadgroupMemoryLength). */
  std::size_t static_threadgroup_memory() const { return static_threadgroup_memory_; }

 private:
  std::uint64_t registry_id_;
  std::size_t static_threadgroup_memory_;
};

/** A Buffer's memory as both drivers hold it: an MTLBuffer (or its simulation) of one device. */
class PlanBufferStorage : public BufferStorage {
 public:
  PlanBufferStorage(void* contents, std::size_t nbytes, std::uint64_t registry_id)
      : BufferStorage(contents, nbytes), registry_id_(registry_id) {}
  std::uint64_t registry_id() const { return registry_id_; }

 private:
  std::uint64_t registry_id_;
};

// ---- the buffers, textures and samplers a plan uses --------------------------------

/** A buffer of the plan; the driver has or makes each one before the first step. */
struct PlanBuffer {
  enum class Source {
    storage,   // a Buffer's MTLBuffer (`storage`)
    no_copy,   // newBufferWithBytesNoCopy over host memory `host`, `length` bytes (whole pages)
    staging,   // a new shared buffer of `length` bytes (host memory copied in and back, large bytes)
    empty,     // a shared buffer of kEmptyBufferLength bytes, bound where Metal wants a buffer and there are no bytes
  };
  Source source = Source::staging;
  const PlanBufferStorage* storage = nullptr;  // kept alive by the plan's commands
  void* host = nullptr;
  std::size_t length = 0;
};

/** The MTLTextureDescriptor of a plan texture: one field per property the driver sets. */
struct PlanTextureDescriptor {
  // MTLTextureType1D ... CubeArray, 1DArray, TextureBuffer
  enum class Type { type1d, type2d, type3d, type2d_array, cube, cube_array, type1d_array, texture_buffer };
  Type type = Type::type2d;
  PixelFormat format;            // pixelFormat: the MTLPixelFormat PixelFormat::name() spells
  bool depth32_float = false;    // pixelFormat: MTLPixelFormatDepth32Float instead of `format`
  std::uint32_t width = 1, height = 1, depth = 1, array_length = 1, mipmap_levels = 1;
  bool private_storage = false;  // storageMode: MTLStorageModePrivate, else MTLStorageModeShared
  bool shader_read = false;      // usage: MTLTextureUsageShaderRead
  bool shader_write = false;     // usage: MTLTextureUsageShaderWrite
  bool shader_atomic = false;    // usage: MTLTextureUsageShaderAtomic (texture atomics, MSL 3.1)
};

/** A texture of the plan. */
struct PlanTexture {
  enum class Source {
    over_buffer,  // [buffer newTextureWithDescriptor:offset:0 bytesPerRow:bytes_per_row] of buffer `buffer`
    staged,       // [device newTextureWithDescriptor:], filled and emptied by blits
  };
  Source source = Source::over_buffer;
  std::size_t buffer = 0;   // index in Plan::buffers of the texels' buffer
  const Texture* texture = nullptr;  // pitches and levels, for the blits (in the plan's commands)
  PlanTextureDescriptor descriptor;
  std::size_t bytes_per_row = 0;  // over_buffer: the rows' pitch in the buffer
};

// ---- the steps ------------------------------------------------------------------

/** memcpy of host memory into a shared buffer, on the host, before the commit. */
struct CopyIn { std::size_t buffer; std::size_t offset; const void* host; std::size_t length; };
struct BeginCompute {};  // [commandBuffer computeCommandEncoder]
struct BeginBlit {};     // [commandBuffer blitCommandEncoder]
struct EndPass {};       // [encoder endEncoding]
/** setComputePipelineState: */
struct SetPipeline { const PlanProgram* program; std::size_t call; };
/** setBuffer:offset:atIndex: */
struct SetBuffer { std::size_t buffer; std::size_t offset; std::uint32_t index; };
/** setBytes:length:atIndex: (at most kMaxInlineBytes) */
struct SetBytes { const std::vector<std::uint8_t>* bytes; std::uint32_t index; };
/** setThreadgroupMemoryLength:atIndex: */
struct SetThreadgroupMemory { std::size_t length; std::uint32_t index; };
/** setTexture:atIndex: */
struct SetTexture { std::size_t texture; std::uint32_t index; };
/** setSamplerState:atIndex: of a sampler state made from `sampler` */
struct SetSampler { const Sampler* sampler; std::uint32_t index; };
/** dispatchThreads:threadsPerThreadgroup: (the last threadgroups may be partial) */
struct DispatchThreads { std::uint32_t threads[3]; std::uint32_t group[3]; };
/** dispatchThreadgroups:threadsPerThreadgroup: (whole threadgroups) */
struct DispatchThreadgroups { std::uint32_t groups[3]; std::uint32_t group[3]; };
/** copyFromBuffer:sourceOffset:toBuffer:destinationOffset:size: */
struct BlitBufferCopy { std::size_t source; std::size_t source_offset; std::size_t destination;
                        std::size_t destination_offset; std::size_t length; };
/** copyFromBuffer:…toTexture: of one image */
struct BlitToTexture { std::size_t buffer; std::size_t texture; ImageCopy copy; };
/** copyFromTexture:…toBuffer: of one image */
struct BlitToBuffer { std::size_t texture; std::size_t buffer; ImageCopy copy; };

using Step = std::variant<CopyIn, BeginCompute, BeginBlit, EndPass, SetPipeline, SetBuffer, SetBytes,
                          SetThreadgroupMemory, SetTexture, SetSampler, DispatchThreads, DispatchThreadgroups,
                          BlitBufferCopy, BlitToTexture, BlitToBuffer>;

/** memcpy from a shared buffer back to host memory once the command buffer has completed. */
struct CopyBack { std::size_t buffer; std::size_t offset; void* host; std::size_t length; };

/**
 * One submission: one command buffer. The driver makes `buffers`, `textures` (in order: a
 * texture over a buffer after that buffer), runs `steps` in order, commits, and after the
 * command buffer completed runs `copy_backs` in order.
 */
struct Plan {
  std::vector<DispatchCommand> commands;  // the calls: keep every program, Buffer and Texture alive
  std::vector<PlanBuffer> buffers;
  std::vector<PlanTexture> textures;
  std::vector<Step> steps;
  std::vector<CopyBack> copy_backs;
};

/** One line per step, for tests and messages ("set_buffer 2 offset 0 index 1"). */
std::string describe(const Plan& plan);
std::string describe(const Step& step);

}  // namespace metalcall::metal
