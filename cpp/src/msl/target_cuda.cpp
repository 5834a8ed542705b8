// The CUDA target: CUDA C++ for NVRTC (-default-device), threadgroup storage in
// __shared__ memory, program-scope constant data as __device__ const, and one
// `extern "C" __global__` entry point per kernel (calling convention in msl/cuda_abi.hpp).
#include <ostream>
#include <string>

#include "msl/cpu_abi.hpp"  // the symbol names, shared with the CPU target
#include "msl/cuda_abi.hpp"
#include "msl/target.hpp"

namespace metalcall::msl {

namespace {

class CudaTarget : public Target {
 public:
  const char* name() const override { return "CUDA"; }

  // The launch ABI, the prelude, and the helpers the entry points use.
  void emit_preamble(std::ostream& o) const override {
    o << "extern \"C\" {\n" << METALCALL_CUDA_ABI_TEXT << "\n}\n";
    o << "#include \"metal_stdlib.h\"\n";
    o << "#define __METAL_VERSION__ 320\n";
    o << "#define METALCALL_KERNEL static __forceinline__\n";
    o << "extern __shared__ __align__(16) unsigned char metalcall_smem[];\n";
    o << "static __forceinline__ void* metalcall_arg(const metalcall_cuda_launch* L, unsigned i) {\n"
         "  return ((L->inline_mask >> i) & 1ull) ? (void*)(L->data + (unsigned long long)L->args[i]) : L->args[i];\n"
         "}\n";
  }

  // Storage is the block's shared memory; a pointer to it is a generic pointer.
  const char* threadgroup_storage() const override { return "__shared__"; }

  // Program-scope constant data lives in device memory.
  const char* program_scope_data() const override { return "__device__"; }

  // A scalar or struct may travel inside the launch struct (see cuda_abi.hpp).
  std::string value_address(int position) const override {
    return "metalcall_arg(L, " + std::to_string(position) + ")";
  }

  // args[i] of a threadgroup parameter is its offset in the block's dynamic shared memory.
  std::string threadgroup_address(const ParamInfo& p) const override {
    return "(metalcall_smem + (unsigned long long)L->args[" + std::to_string(p.position) + "])";
  }

  const char* layout_declaration() const override { return "extern \"C\" __constant__ const metalcall_cuda_layout "; }
  const char* binding_type() const override { return "long long"; }

  // One __global__ per kernel. A kernel with barriers or SIMD-group functions
  // ("exact") is launched so that every block is a whole threadgroup, partial ones
  // included (the runtime launches the partial edge groups separately), so that no
  // thread outside the grid exists and barriers see exactly the group's threads.
  // Other kernels are one launch of whole blocks, and threads outside the grid return.
  void emit_entry_point(std::ostream& o, const EntryPoint& e) const override {
    o << "extern \"C\" __global__ void " << cpu_entry_symbol(e.index)
      << "(const __grid_constant__ metalcall_cuda_launch Lv) {\n"
         "  const metalcall_cuda_launch* const L = &Lv;\n"
         "  const unsigned tx = L->group[0], ty = L->group[1], tz = L->group[2];\n"
         "  const unsigned gx = L->origin[0] + blockIdx.x, gy = L->origin[1] + blockIdx.y, gz = L->origin[2] + blockIdx.z;\n"
         "  const unsigned x0 = gx * tx, y0 = gy * ty, z0 = gz * tz;\n"
         "  const unsigned lx = threadIdx.x, ly = threadIdx.y, lz = threadIdx.z;\n";
    if (e.uses_fibers) {
      o << "  const unsigned ax = blockDim.x, ay = blockDim.y, az = blockDim.z;\n";
    } else {
      o << "  if ((unsigned long long)x0 + lx >= L->grid[0] || (unsigned long long)y0 + ly >= L->grid[1] ||\n"
           "      (unsigned long long)z0 + lz >= L->grid[2]) return;\n"
           "  const unsigned ax = L->grid[0] - x0 < tx ? L->grid[0] - x0 : tx;\n"
           "  const unsigned ay = L->grid[1] - y0 < ty ? L->grid[1] - y0 : ty;\n"
           "  const unsigned az = L->grid[2] - z0 < tz ? L->grid[2] - z0 : tz;\n";
    }
    o << "  (void)tx; (void)ty; (void)tz; (void)gx; (void)gy; (void)gz; (void)x0; (void)y0; (void)z0;\n"
         "  (void)lx; (void)ly; (void)lz; (void)ax; (void)ay; (void)az;\n"
      << e.argument_setup << "  " << e.call << "\n}\n";
  }
};

}  // namespace

std::unique_ptr<Target> make_cuda_target() { return std::make_unique<CudaTarget>(); }

}  // namespace metalcall::msl
