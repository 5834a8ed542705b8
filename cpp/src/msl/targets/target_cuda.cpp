// The CUDA target: CUDA C++ for NVRTC (-default-device), threadgroup storage in
// __shared__ memory, program-scope constant data as __device__ const, and one
// `extern "C" __global__` entry point per kernel taking its own parameter block
// (calling convention in msl/targets/cuda_abi.hpp).
#include <ostream>
#include <set>
#include <string>

#include "msl/targets/cpu_abi.hpp"  // the symbol names, shared with the CPU target
#include "msl/targets/cuda_abi.hpp"
#include "msl/targets/nvrtc_names.hpp"
#include "msl/targets/target.hpp"

namespace metalcall::msl {

namespace {

// Field names in a parameter block: vN holds parameter N's value (or shared-memory
// offset), aN the address of its memory.
std::string value_field(const ParamInfo& p) { return "v" + std::to_string(p.position); }
std::string address_field(const ParamInfo& p) { return "a" + std::to_string(p.position); }

// A `constant T&` whose value may travel in the block (up to Metal's 4 KiB of setBytes; a larger
// one comes in a buffer: CUDA's parameter space is 32 KiB, SPIRV-Cross's 16 KiB blocks overflowed it).
bool inline_reference(const ParamInfo& p) { return p.kind == ParamKind::reference && p.is_const; }

bool has_value_field(const ParamInfo& p) {
  return p.kind == ParamKind::value || p.kind == ParamKind::threadgroup_memory || p.kind == ParamKind::texture ||
         p.kind == ParamKind::sampler || (p.kind == ParamKind::reference && p.is_const);
}
bool has_address_field(const ParamInfo& p) { return p.kind == ParamKind::buffer || p.kind == ParamKind::reference; }

class CudaTarget : public Target {
 public:
  const char* name() const override { return "CUDA"; }
  bool clashes_with_target(const std::string& id) const override { return nvrtc_global_names().count(id) != 0; }
  // NVRTC declares all(bool) and any(bool) implicitly (warp votes), as metal::all(bool) is.
  // Its global abs(int) and abs(long) win the tie with metal's template and give PTX's abs.s32
  // and abs.s64, whose result ptxas takes as never negative: `abs(INT_MIN) % d` lost its sign
  // (tests/conformance/test_integer_widths.py); metal::abs wraps |MIN| to MIN as MSL does.
  // Its global min(int, int) and max(int, int) became signed min/max that ptxas fuses into a
  // VIMNMX3 dropping a negated operand (`min(min(x, -y), z)`); metal's compare biased unsigned.
  // Its global fmin(float, float) and fmax (fminf, fmaxf) order -0.0 below +0.0, where MSL's
  // return the first of two zeros, and its rsqrt(float) is rsqrtf (2 ulp) where MSL's is correctly
  // rounded without fast math (tests/conformance/test_audit_special_values.py on the H200).
  const std::set<std::string>& ambiguous_library_calls() const override {
    static const auto& names = *new std::set<std::string>{"all", "any", "abs", "min", "max", "fmin", "fmax", "rsqrt"};
    return names;
  }
  // GPUs do not trap on integer division: the plain operators stay.
  bool guards_division() const override { return false; }
  bool takes_range_designators() const override { return false; }  // NVRTC does not
  const char* half_literal() const override { return "metal::mtl_rt::half_lit"; }
  bool takes_threadgroup_initializers() const override { return false; }
  bool wraps_conditional_literals() const override { return true; }
  bool rejoins_barrier_branches() const override { return true; }
  bool pairs_accumulator_elements() const override { return true; }
  bool hands_over_loop_nests() const override { return true; }
  bool strip_mines_loops() const override { return true; }
  bool strips_innermost_loops_only() const override { return true; }
  bool hands_over_async_copies() const override { return true; }

  // The launch ABI, the prelude, and the restrict qualifier of buffer pointers: the
  // runtime builds the module a second time with METALCALL_NO_RESTRICT for calls
  // whose buffers overlap.
  void emit_preamble(std::ostream& o) const override {
    o << "extern \"C\" {\n" << METALCALL_CUDA_ABI_TEXT << "\n}\n";
    o << "#include \"metal_stdlib.h\"\n";
    o << "#define METALCALL_KERNEL static __forceinline__\n";
    o << "#ifdef METALCALL_NO_RESTRICT\n#define METALCALL_RESTRICT\n#else\n#define METALCALL_RESTRICT __restrict__\n#endif\n";
    o << "extern __shared__ __align__(16) unsigned char metalcall_smem[];\n";
    // offsetof as a constant expression: NVRTC has neither <cstddef> nor __builtin_offsetof;
    // __INTADDR__ is the front end's (EDG's) own way to spell it.
    o << "#define METALCALL_OFFSETOF(T, m) ((long long)__INTADDR__(&(((T*)0)->m)))\n";
    o << "struct metalcall_no_value {};\n"
         "template <class T, bool Fits = (sizeof(T) <= 4096)> struct metalcall_inline_value { typedef T type; };\n"
         "template <class T> struct metalcall_inline_value<T, false> { typedef metalcall_no_value type; };\n"
         "template <class T> struct metalcall_has_value { static constexpr bool value = true; };\n"
         "template <> struct metalcall_has_value<metalcall_no_value> { static constexpr bool value = false; };\n"
         // A coarsened entry's `constant T&` (entry_points.cpp): a copy when small and trivially
         // copyable, else the reference itself.
         "template <class T, bool Copy = (sizeof(T) <= 32 && __is_trivially_copyable(T))> struct metalcall_constant_copy {\n"
         "  T& ref;\n  __device__ explicit metalcall_constant_copy(T& r) : ref(r) {}\n  __device__ T& get() { return ref; }\n};\n"
         "template <class T> struct metalcall_constant_copy<T, true> {\n"
         "  T value;\n  __device__ explicit metalcall_constant_copy(T& r) : value(r) {}\n  __device__ T& get() { return value; }\n};\n";
  }

  // Storage is the block's shared memory; a pointer to it is a generic pointer.
  const char* threadgroup_storage() const override { return "__shared__"; }

  // Program-scope constant data lives in device memory.
  const char* program_scope_data() const override { return "__device__"; }
  bool constant_data_constexpr() const override { return true; }
  bool launders_punned_addresses() const override { return true; }
  bool wraps_small_negations() const override { return true; }
  // A NaN to long or ulong, or a double NaN to int or uint, gave the minimum (metal_conversion.h).
  bool conditions_float_to_int() const override { return true; }

  // The geometry, then per parameter: a value (by value, `constant T&`), an address
  // (buffers, references) or a shared-memory offset ([[threadgroup(i)]]).
  void emit_parameter_block(std::ostream& o, std::size_t index, const std::vector<ParamSlot>& params) const override {
    o << "struct " << cuda_params_type(index) << " {\n  metalcall_cuda_geometry geometry;\n";
    for (const auto& s : params) {
      if (s.info.kind == ParamKind::threadgroup_memory) o << "  unsigned long long " << value_field(s.info) << ";\n";
      else if (inline_reference(s.info)) o << "  metalcall_inline_value<" << s.element << ">::type " << value_field(s.info) << ";\n";
      else if (has_value_field(s.info)) o << "  " << s.element << " " << value_field(s.info) << ";\n";
      if (has_address_field(s.info)) o << "  void* " << address_field(s.info) << ";\n";
    }
    o << "};\n";
  }

  std::string buffer_address(const ParamInfo& p) const override { return "mtl_P." + address_field(p); }

  // The user's kernel function is inlined into the entry point; restrict on its
  // pointer parameters lets NVVM load const buffers with ld.global.nc.
  const char* kernel_pointer_qualifier() const override { return "METALCALL_RESTRICT"; }

  // A `constant T&` reads the buffer that backs it when there is one, else its value field.
  std::string value_address(const ParamInfo& p) const override {
    // Textures and samplers: their descriptors (metal_texture.h) travel by value.
    if (p.kind == ParamKind::value || p.kind == ParamKind::texture || p.kind == ParamKind::sampler)
      return "&mtl_P." + value_field(p);
    if (!p.is_const) return "mtl_P." + address_field(p);
    return "(mtl_P." + address_field(p) + " ? (const void*)mtl_P." + address_field(p) + " : (const void*)&mtl_P." +
           value_field(p) + ")";
  }

  // The field is the parameter's offset in the block's dynamic shared memory.
  std::string threadgroup_address(const ParamInfo& p) const override {
    return "(metalcall_smem + mtl_P." + value_field(p) + ")";
  }

  // The block's dynamic shared memory, where the [[threadgroup(i)]] parameters lie, filled by its
  // threads together at the entry's start (metal_poison.h). The kernel's own __shared__ variables
  // are not filled: CUDA leaves them undefined at each block's start, as Metal does.
  std::string threadgroup_poison(const std::vector<ParamInfo>& memory) const override {
    return memory.empty() ? ""
                          : "  metal::mtl_rt::poison_dynamic_shared(metalcall_smem, (threadIdx.z * blockDim.y + "
                            "threadIdx.y) * blockDim.x + threadIdx.x, blockDim.x * blockDim.y * blockDim.z);\n";
  }

  // In global memory, not __constant__: only the host reads a table (cuModuleGetGlobal),
  // and the constant bank's 64 KiB held the tables of only ~150 kernels (ggml has 633).
  const char* layout_declaration() const override { return "extern \"C\" __device__ const metalcall_cuda_layout "; }
  const char* binding_type() const override { return "long long"; }

  std::string layout_entry_tail(std::size_t index, const ParamInfo& p) const override {
    const std::string type = cuda_params_type(index);
    auto offset = [&](bool has, const std::string& field) {
      return has ? "METALCALL_OFFSETOF(" + type + ", " + field + ")" : std::string("-1");
    };
    if (p.kind == ParamKind::builtin) return ", -1, -1";
    std::string value = offset(has_value_field(p), value_field(p));
    if (inline_reference(p))  // no field for a value over Metal's inline limit: it comes in a buffer
      value = "(metalcall_has_value<decltype(((" + type + "*)0)->" + value_field(p) + ")>::value ? " + value + " : -1)";
    return ", " + value + ", " + offset(has_address_field(p), address_field(p));
  }

  // The block's size and alignment: what the runtime fills per launch.
  std::string layout_terminator(std::size_t index) const override {
    const std::string type = cuda_params_type(index);
    return "{sizeof(" + type + "), alignof(" + type + "), -1, -1, -1}";
  }

  // One __global__ per kernel. A kernel with barriers or SIMD-group functions
  // ("exact") is launched so that every block is a whole threadgroup, partial ones
  // included (the runtime launches the partial edge groups separately), so that no
  // thread outside the grid exists and barriers see exactly the group's threads.
  // Other kernels are one launch of whole blocks, and threads outside the grid
  // return: along x always; along y and z only when the threadgroup has more than
  // one thread there (else every block's y and z lie inside the grid) — a uniform
  // branch that a 1-D dispatch never takes.
  void emit_entry_point(std::ostream& o, const EntryPoint& e) const override {
    o << "extern \"C\" __global__ void " << cpu_entry_symbol(e.index) << "(const __grid_constant__ "
      << cuda_params_type(e.index)
      << " mtl_P) {\n"
         "  const metalcall_cuda_geometry* const mtl_L = &mtl_P.geometry;\n"
         // Every thread writes its submission's ticket for the loops' stop checks (metal_stop.h:
         // its low 32 bits).
         "  __metalcall_ticket = (unsigned)mtl_L->ticket;\n"
         "  const unsigned mtl_tx = mtl_L->group[0], mtl_ty = mtl_L->group[1], mtl_tz = mtl_L->group[2];\n"
         "  const unsigned mtl_gx = mtl_L->origin[0] + blockIdx.x, mtl_gy = mtl_L->origin[1] + blockIdx.y, mtl_gz = mtl_L->origin[2] + blockIdx.z;\n"
         "  const unsigned mtl_x0 = mtl_gx * mtl_tx, mtl_y0 = mtl_gy * mtl_ty, mtl_z0 = mtl_gz * mtl_tz;\n"
         "  const unsigned mtl_lx = threadIdx.x, mtl_ly = threadIdx.y, mtl_lz = threadIdx.z;\n"
      << e.group_start;  // before any thread returns: its barrier needs them all
    if (e.uses_fibers) {
      o << "  const unsigned mtl_ax = blockDim.x, mtl_ay = blockDim.y, mtl_az = blockDim.z;\n";
    } else {
      o << "  if ((unsigned long long)mtl_x0 + mtl_lx >= mtl_L->grid[0]) return;\n"
           "  if ((mtl_ty | mtl_tz) != 1u &&\n"
           "      ((unsigned long long)mtl_y0 + mtl_ly >= mtl_L->grid[1] || (unsigned long long)mtl_z0 + mtl_lz >= mtl_L->grid[2])) return;\n"
           "  const unsigned mtl_ax = mtl_L->grid[0] - mtl_x0 < mtl_tx ? mtl_L->grid[0] - mtl_x0 : mtl_tx;\n"
           "  const unsigned mtl_ay = mtl_L->grid[1] - mtl_y0 < mtl_ty ? mtl_L->grid[1] - mtl_y0 : mtl_ty;\n"
           "  const unsigned mtl_az = mtl_L->grid[2] - mtl_z0 < mtl_tz ? mtl_L->grid[2] - mtl_z0 : mtl_tz;\n";
    }
    o << "  (void)mtl_tx; (void)mtl_ty; (void)mtl_tz; (void)mtl_gx; (void)mtl_gy; (void)mtl_gz; (void)mtl_x0; (void)mtl_y0; (void)mtl_z0;\n"
         "  (void)mtl_lx; (void)mtl_ly; (void)mtl_lz; (void)mtl_ax; (void)mtl_ay; (void)mtl_az;\n"
      << e.argument_setup << "  " << e.call << "\n}\n";
    if (e.coarsenable) {
      o << METALCALL_CUDA_COARSENED_GUARD "\n";
      emit_coarsened_entry_point(o, e);
      o << "#endif\n";
    }
  }

  bool emits_coarsened_entries() const override { return true; }

 private:
  // The coarsened entry point (cuda_abi.hpp): thread t runs positions 4t ... 4t+3 in order.
  // The kernel reads only its position (coarsenable), so mtl_x0 + mtl_lx, the position the
  // call is written with, is all it needs. Whole groups of four are unrolled with the position
  // computed in 32 bits from 4t, and the buffers assumed 16-byte aligned (the runtime checks),
  // so that loads and stores at consecutive positions merge into vector ones; the grid's last
  // partial group runs one position at a time.
  void emit_coarsened_entry_point(std::ostream& o, const EntryPoint& e) const {
    o << "extern \"C\" __global__ void " << cuda_coarsened_symbol(cpu_entry_symbol(e.index))
      << "(const __grid_constant__ " << cuda_params_type(e.index)
      << " mtl_P) {\n"
         "  const metalcall_cuda_geometry* const mtl_L = &mtl_P.geometry;\n"
         "  const unsigned mtl_t = blockIdx.x * blockDim.x + threadIdx.x;\n"
         "  const unsigned long long mtl_n = mtl_L->grid[0], mtl_first = (unsigned long long)mtl_t * "
      << kCudaCoarsening
      << "u;\n"
         "  if (mtl_first >= mtl_n) return;\n"
         "  const unsigned mtl_lx = 0u;\n"
      << e.aligned_argument_setup
      << "  if (mtl_first + "
      << kCudaCoarsening
      << "u <= mtl_n) {\n"
         "#pragma unroll\n"
         "    for (unsigned mtl_k = 0u; mtl_k < "
      << kCudaCoarsening
      << "u; ++mtl_k) {\n"
         "      const unsigned mtl_x0 = mtl_t * "
      << kCudaCoarsening << "u + mtl_k;\n      " << e.call
      << "\n    }\n"
         "  } else {\n"
         "#pragma unroll 1\n"
         "    for (unsigned mtl_x0 = (unsigned)mtl_first; mtl_x0 < mtl_n; ++mtl_x0) {\n      "
      << e.call << "\n    }\n  }\n}\n";
  }
};

}  // namespace

std::unique_ptr<Target> make_cuda_target() { return std::make_unique<CudaTarget>(); }

}  // namespace metalcall::msl
