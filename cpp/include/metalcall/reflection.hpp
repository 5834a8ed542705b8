// The reflection table: what a kernel's parameters are. The MSL front end
// produces it on the CPU and CUDA backends, Metal's pipeline reflection on a Mac.
// It is the single source for argument validation and scalar packing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace metalcall {

enum class AddressSpace { none, device, constant, threadgroup, thread };

/** How a parameter receives its value. */
enum class ParamKind {
  buffer,              // device/constant pointer bound to [[buffer(i)]]
  reference,           // constant T& bound to [[buffer(i)]]
  value,               // T passed by value in [[buffer(i)]]
  threadgroup_memory,  // threadgroup T* [[threadgroup(i)]]
  builtin,             // [[thread_position_in_grid]] and friends
  texture,             // texture1d/2d/3d/2d_array/cube/..., depth2d/... <T, access> bound to [[texture(i)]]
  sampler,             // sampler bound to [[sampler(i)]]
};

/** The kind of a texture parameter (ParamKind::texture). */
enum class TextureType {
  none, texture1d, texture2d, texture3d, texture2d_array, texturecube, depth2d,
  texturecube_array, depth2d_array, depthcube, depthcube_array,  // 6 faces per cube; r32float depth
  texture2d_ms, texture2d_ms_array, depth2d_ms, depth2d_ms_array,  // multisampled: one level, sample_count samples
  texture1d_array,  // array_length rows of one texel height (MTLTextureType1DArray); one mip level
  texture_buffer,   // MSL 2.1: a 1-D texture over buffer memory (MTLTextureTypeTextureBuffer): read/write, no sampling
};

/** depth2d, depth2d_array, depthcube, depthcube_array, depth2d_ms, depth2d_ms_array: one r32float channel. */
bool is_depth(TextureType type);
/** texturecube, texturecube_array, depthcube, depthcube_array: 6 square faces per cube. */
bool is_cube(TextureType type);
/** texture2d_ms, texture2d_ms_array, depth2d_ms, depth2d_ms_array. */
bool is_multisample(TextureType type);
/** The *_array types: array_length is an element count the kernel indexes. */
bool is_array(TextureType type);

/** How a kernel may use a texture (MSL's access::...); sample is MSL's default. */
enum class TextureAccess { sample, read, write, read_write };

enum class Builtin {
  none,
  thread_position_in_grid,
  thread_position_in_threadgroup,
  threadgroup_position_in_grid,
  threads_per_threadgroup,
  threadgroups_per_grid,
  threads_per_grid,
  thread_index_in_threadgroup,
  thread_index_in_simdgroup,
  simdgroup_index_in_threadgroup,
  threads_per_simdgroup,
  simdgroups_per_threadgroup,
  dispatch_threads_per_threadgroup,
  thread_execution_width,  // the older name of threads_per_simdgroup
  dispatch_simdgroups_per_threadgroup,
  thread_index_in_quadgroup,
  quadgroup_index_in_threadgroup,
  quadgroups_per_threadgroup,
  dispatch_quadgroups_per_threadgroup,
  // The stage-in region's origin and size (MSL's compute stage-in); metalcall sets no stage-in
  // region, so they are 0 and the dispatch's grid.
  grid_origin,
  grid_size,
};

/** Component type of a parameter's element, when it is an MSL scalar or vector. */
enum class ScalarType {
  unknown, boolean, i8, u8, i16, u16, i32, u32, i64, u64, f16, bf16, f32,
  f64,  // host data only (MSL has no double): lets a float64 array be refused clearly
};

struct ParamInfo {
  int position = 0;         // position in the kernel's parameter list
  int binding = -1;         // the i of [[buffer(i)]] / [[threadgroup(i)]]; -1 for builtins
  std::string name;
  ParamKind kind = ParamKind::buffer;
  AddressSpace address_space = AddressSpace::none;
  std::string type_name;    // element type as written in MSL, e.g. "float", "float4", "Params"
  ScalarType scalar = ScalarType::unknown;  // component type; unknown for structs
  int vector_width = 1;     // 1 for scalars, 2..4 for vectors
  // A matrix's component type (float for `float4x4` or an alias of it); unknown for the rest,
  // and where only Metal's reflection is known (core then reads type_name).
  ScalarType matrix_scalar = ScalarType::unknown;
  bool is_const = false;    // the kernel cannot write through it
  Builtin builtin = Builtin::none;
  int builtin_width = 1;    // 1, 2 or 3 components of a builtin
  std::size_t element_size = 0;   // sizeof(element), from the compiled kernel
  std::size_t element_align = 0;  // alignof(element)
  int line = 0, column = 0;       // where it is declared in the user's source
  // A pointer every thread indexes as p[thread_position_in_grid] in straight-line code
  // (msl/analysis/grid_indexing.hpp): an unchecked call needs grid.x elements in it.
  bool grid_indexed = false;
  TextureType texture_type = TextureType::none;         // ParamKind::texture: its type; scalar is T
  TextureAccess texture_access = TextureAccess::sample;  // ParamKind::texture: access::...
  // ParamKind::texture: 0 for one texture; N for `array<texture2d<T>, N>`, which takes the N
  // texture indices binding .. binding + N - 1 (as Metal binds it).
  int texture_count = 0;
  // [[buffer(i), function_constant(name)]] (textures and samplers too): the bool function
  // constant that decides whether the parameter exists; empty when none does.
  std::string function_constant;
  // False when that constant is false or not given in this specialisation: the parameter does
  // not exist (as in Metal's pipeline), a call passes None or leaves it out at the end, and
  // nothing is bound (translated kernels see a null pointer or zeros). docs/design.md.
  bool enabled = true;
};

struct KernelInfo {
  std::string name;  // the name a user calls it by (host_name for templates)
  std::vector<ParamInfo> params;  // in declaration order
  unsigned max_total_threads_per_threadgroup = 0;  // the kernel's limit on this device
  unsigned declared_max_threads = 0;  // [[max_total_threads_per_threadgroup(N)]], 0 if none
  // The SIMD-group width this pipeline runs with (Metal: its threadExecutionWidth, 8 to 64 on Intel
  // and AMD GPUs, not always the device's simd_width); 0: the device's simd_width.
  unsigned thread_execution_width = 0;
  int line = 0;
  // The translating backends' verdict (msl/analysis/sync_reachability.hpp): true when the
  // kernel may reach a barrier, a SIMD- or quad-group function or a SIMD-group matrix (or
  // that cannot be ruled out), so its threads run as fibers on the CPU; false when they run
  // as a plain loop. Unset where the backend does not decide it (Metal).
  std::optional<bool> threads_synchronise;
  // How the translating CPU backend runs a group's threads: "loop" (a plain loop), "fibers", or
  // "regions" (barriers only: the regions between them each a loop over the threads,
  // msl/passes/barrier_regions.hpp). Empty where the backend does not say (Metal, CUDA).
  std::string thread_schedule;
  /** The front end proved that the source has no loop: a run takes time bounded by the
   *  kernel's code and the grid (MSL has no goto or recursion). False when unknown (Metal). */
  bool loop_free = false;
  /** The kernel may reach a texture atomic function (MSL 3.1's tex.atomic_fetch_add(...) and
   *  the others; by name, as threads_synchronise): GPU families without them refuse it. */
  bool texture_atomics = false;

  /** Parameters bound from call arguments ([[buffer(i)]]), sorted by binding index. */
  std::vector<const ParamInfo*> buffer_params() const;
  /** [[threadgroup(i)]] parameters, sorted by binding index. */
  std::vector<const ParamInfo*> threadgroup_params() const;
  /** [[texture(i)]] parameters, sorted by binding index. */
  std::vector<const ParamInfo*> texture_params() const;
  /** [[sampler(i)]] parameters, sorted by binding index. */
  std::vector<const ParamInfo*> sampler_params() const;
};

const char* to_string(AddressSpace);
const char* to_string(ParamKind);
const char* to_string(Builtin);
const char* to_string(ScalarType);
const char* to_string(TextureType);   // "texture2d", …
const char* to_string(TextureAccess); // "read", …
std::size_t scalar_size(ScalarType);
/** Parses "float", "uint", "half", "int32_t", … ; unknown for anything else. */
ScalarType scalar_type_from_name(const std::string& name);
/** The component type of a matrix type name (`float4x4`, `metal::half3x3`, `matrix<float, 4, 4>`);
 *  unknown for anything else. Aliases are the caller's to resolve. */
ScalarType matrix_component(const std::string& type_name);
/** Maps a builtin attribute name to its enum; Builtin::none if it is not one. */
Builtin builtin_from_attribute(const std::string& attribute);

}  // namespace metalcall
