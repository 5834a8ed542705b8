// The CPU target: host C++ for the system compiler, entry points that run a range
// of threadgroups on one worker thread (a vectorised loop, or fibers when threads
// wait for each other), calling convention in msl/targets/cpu_abi.hpp.
#include <ostream>
#include <string>

#include "msl/targets/cpu_abi.hpp"
#include "msl/targets/target.hpp"

namespace metalcall::msl {

namespace {

class CpuTarget : public Target {
 public:
  explicit CpuTarget(bool checked) : checked_(checked) {}

  const char* name() const override { return "CPU"; }
  bool guards_division() const override { return true; }
  // Rewritten as loops here too: g++ takes no designators in C++ (clang++ does), and checked
  // mode's local arrays are classes (mtl_checked_array), which take none either.
  bool takes_range_designators() const override { return false; }
  const char* half_literal() const override { return "mtl_half"; }
  bool takes_threadgroup_initializers() const override { return true; }
  bool wraps_conditional_literals() const override { return false; }
  // bfloat is a class here too (ggml's `c ? *(device bfloat*)p : 0`); checked mode's
  // pointers take the literal as a null pointer (mtl_checked(int_literal), metal_checked.h).
  bool wraps_conditional_int_literals() const override { return true; }
  bool casts_conditional_arms() const override { return true; }

  void emit_preamble(std::ostream& o) const override {
    o << "extern \"C\" {\n" << METALCALL_CPU_ABI_TEXT << "\n}\n";
    if (checked_) o << "#define METALCALL_CHECKED 1\n";
    o << "#include \"metal_stdlib.h\"\n";
    o << "#define METALCALL_KERNEL static inline __attribute__((always_inline))\n";
    // Threads of a group are independent between barriers: vectorise across them,
    // two vectors at a time so that long dependency chains overlap. Not with clang's
    // `omp simd`: it keeps a thread's local arrays and vectors (addressed memory) in one
    // stack slot for all the lanes of a vector and drops the dependences between them,
    // so `float4 v = ...; v[i]` or `int a[4]; a[k]` with a run-time index read another
    // thread's values (found by tools/msl_fuzz; g++ gives each lane its own copy). clang
    // is asked to vectorise with its own dependence checks instead.
    // A kernel calling sin, cos, exp, log or pow where glibc's vector math is linked
    // (METALCALL_VECTOR_MATH, cpu_compiler.cpp): 8 lanes, the widest its functions take
    // with clang 16 (at 32 lanes every call stayed a scalar libm call: 6.7x slower).
    o << "#if defined(__clang__) && defined(METALCALL_VECTOR_MATH)\n"
         "#define METALCALL_SIMD_LOOP _Pragma(\"clang loop vectorize(enable) vectorize_width(8) interleave(enable)\")\n"
         "#elif defined(__clang__) && defined(__AVX512F__)\n"
         "#define METALCALL_SIMD_LOOP _Pragma(\"clang loop vectorize(enable) vectorize_width(32) interleave(enable)\")\n"
         "#elif defined(__clang__)\n"
         "#define METALCALL_SIMD_LOOP _Pragma(\"clang loop vectorize(enable) vectorize_width(16) interleave(enable)\")\n"
         "#elif defined(__AVX512F__)\n#define METALCALL_SIMD_LOOP _Pragma(\"omp simd simdlen(32)\")\n"
         "#else\n#define METALCALL_SIMD_LOOP _Pragma(\"omp simd simdlen(16)\")\n#endif\n";
  }

  // Storage is shared by the group's fibers, which all run on one worker thread;
  // a pointer to it is a plain pointer.
  const char* threadgroup_storage() const override { return "static thread_local"; }
  bool checks_threadgroup_sizes() const override { return true; }

  // Host memory has no address spaces: program-scope constant data is plain const.
  const char* program_scope_data() const override { return nullptr; }
  bool strip_mines_loops() const override { return true; }

  // The launch carries no parameter block: args[i] points at parameter i's memory.
  void emit_parameter_block(std::ostream&, std::size_t, const std::vector<ParamSlot>&) const override {}
  std::string buffer_address(const ParamInfo& p) const override { return "mtl_L->args[" + std::to_string(p.position) + "]"; }
  const char* kernel_pointer_qualifier() const override { return ""; }
  // 32, or the width of the simulated Metal pipeline the launch runs for (the Metal simulator).
  const char* simd_width_expression() const override { return "mtl_sw"; }
  std::string grid_size_expression(int d) const override { return d == 0 ? "mtl_nx" : d == 1 ? "mtl_ny" : "mtl_nz"; }
  std::string value_address(const ParamInfo& p) const override { return "mtl_L->args[" + std::to_string(p.position) + "]"; }

  std::string threadgroup_address(const ParamInfo& p) const override {
    return "mtl_W->threadgroup_memory[" + std::to_string(p.binding) + "]";
  }

  // When the launch asks: a new serial for the group's threadgroup variables (METAL_THREADGROUP_POISON
  // fills each at its declaration, and nothing while the serial stays 0) and its [[threadgroup(i)]]
  // memory filled here: the worker's, reused by every group.
  std::string threadgroup_poison(const std::vector<ParamInfo>& memory) const override {
    std::string s = "    if (mtl_L->poison_threadgroup) {\n      metal::mtl_rt::threadgroup_group_starts();\n";
    for (const ParamInfo& p : memory)
      s += "      metal::mtl_rt::poison_threadgroup_bytes(" + threadgroup_address(p) + ", mtl_L->arg_bytes[" +
           std::to_string(p.position) + "]);\n";
    return s + "    }\n";
  }
  bool poisons_threadgroup_per_launch() const override { return true; }

  const char* layout_declaration() const override {
    return "extern \"C\" __attribute__((visibility(\"default\"))) const metalcall_cpu_layout ";
  }
  const char* binding_type() const override { return "long"; }
  std::string layout_entry_tail(std::size_t, const ParamInfo&) const override { return ""; }
  std::string layout_terminator(std::size_t) const override { return "{0, 0, -1}"; }

  void emit_entry_point(std::ostream& o, const EntryPoint& e) const override {
    if (e.regions) emit_region_entry_point(o, e);
    else if (e.uses_fibers) emit_fiber_entry_point(o, e);
    else emit_loop_entry_point(o, e);
  }

  bool latches_simd_loops() const override { return true; }
  bool blocks_lambda_conversions() const override { return true; }
  bool restores_vla_error() const override { return true; }
  bool forms_barrier_regions() const override { return true; }
  // NaN to int 0 and saturation, as MSL's GPUs (metal_conversion.h): x86 gives INT_MIN.
  bool conditions_float_to_int() const override { return true; }

 private:
  bool checked_;

  static constexpr const char* kSignature =
      "(const metalcall_cpu_launch* mtl_L, unsigned long long mtl_g_begin, "
      "unsigned long long mtl_g_end, const metalcall_cpu_worker* mtl_W)";

  // The launch's SIMD-group width (simd_width_expression): 32, or a simulated Metal pipeline's.
  static constexpr const char* kSimdWidth = "  const unsigned mtl_sw = mtl_L->simd_width;\n  (void)mtl_sw;\n";
  // The prelude's SIMD-group functions read it too (metal_sync.h's simd_lanes()).
  static constexpr const char* kSimdLanes = "  metal::mtl_rt::simd_lanes_now = mtl_L->simd_width;\n";

  // Where a threadgroup starts and how large it is (the last one may be partial).
  static constexpr const char* kGroupLoop =
      "  const unsigned long long mtl_ngx = mtl_L->groups[0], mtl_ngy = mtl_L->groups[1];\n"
      "  const unsigned mtl_nx = mtl_L->grid[0], mtl_ny = mtl_L->grid[1], mtl_nz = mtl_L->grid[2];\n"
      "  (void)mtl_nx; (void)mtl_ny; (void)mtl_nz;\n"
      "  const unsigned mtl_tx = mtl_L->group[0], mtl_ty = mtl_L->group[1], mtl_tz = mtl_L->group[2];\n"
      "  for (unsigned long long mtl_g = mtl_g_begin; mtl_g < mtl_g_end; ++mtl_g) {\n"
      "    const unsigned mtl_gx = (unsigned)(mtl_g % mtl_ngx), mtl_gy = (unsigned)((mtl_g / mtl_ngx) % mtl_ngy), mtl_gz = (unsigned)(mtl_g / (mtl_ngx * mtl_ngy));\n"
      "    const unsigned mtl_x0 = mtl_gx * mtl_tx, mtl_y0 = mtl_gy * mtl_ty, mtl_z0 = mtl_gz * mtl_tz;\n"
      "    const unsigned mtl_ax = mtl_L->grid[0] - mtl_x0 < mtl_tx ? mtl_L->grid[0] - mtl_x0 : mtl_tx;\n"
      "    const unsigned mtl_ay = mtl_L->grid[1] - mtl_y0 < mtl_ty ? mtl_L->grid[1] - mtl_y0 : mtl_ty;\n"
      "    const unsigned mtl_az = mtl_L->grid[2] - mtl_z0 < mtl_tz ? mtl_L->grid[2] - mtl_z0 : mtl_tz;\n";

  // Which launch and kernel a fault message names (checked mode's faults, an oversized
  // threadgroup variable: metal_sync.h).
  std::string checked_setup(const EntryPoint& e) const {
    return "  metal::mtl_rt::launch = mtl_L;\n  metal::mtl_rt::kernel_name = \"" + e.kernel_name + "\";\n" +
           (checked_ ? "  metal::mtl_rt::region_count = 0;\n" : "");
  }

  // The threads of a group as a plain loop the compiler can vectorise.
  void emit_loop_entry_point(std::ostream& o, const EntryPoint& e) const {
    o << "extern \"C\" __attribute__((visibility(\"default\"))) void " << cpu_entry_symbol(e.index) << kSignature
      << " {\n  metal::mtl_rt::worker = mtl_W;\n" << kSimdWidth << kSimdLanes << checked_setup(e) << e.argument_setup << kGroupLoop << e.group_start
      << "    (void)mtl_ax; (void)mtl_ay; (void)mtl_az; (void)mtl_gx; (void)mtl_gy; (void)mtl_gz;\n"
         "    for (unsigned mtl_lz = 0; mtl_lz < mtl_az; ++mtl_lz)\n"
         "      for (unsigned mtl_ly = 0; mtl_ly < mtl_ay; ++mtl_ly)\n"
         "        METALCALL_SIMD_LOOP\n"
         // x, not x0 + lx, is the induction variable: g++ cannot vectorise an index
         // that might wrap around, and x < x0 + ax proves it does not.
         "        for (unsigned mtl_x = mtl_x0; mtl_x < mtl_x0 + mtl_ax; ++mtl_x) {\n"
         "          const unsigned mtl_lx = mtl_x - mtl_x0;\n"
         "          "
      << e.call << "\n        }\n  }\n}\n";
  }

  // Barriers as regions (msl/passes/barrier_regions.hpp): the kernel runs once per group and
  // loops over its threads itself, reading the group from mtl_regions::mtl_now (metal_regions.h).
  // Its per-thread builtins are recomputed in each region: the arguments pass thread 0's.
  void emit_region_entry_point(std::ostream& o, const EntryPoint& e) const {
    o << "extern \"C\" __attribute__((visibility(\"default\"))) void " << cpu_entry_symbol(e.index) << kSignature
      << " {\n  metal::mtl_rt::worker = mtl_W;\n" << kSimdWidth << kSimdLanes << checked_setup(e) << e.argument_setup
      << kGroupLoop << e.group_start
      << "    metal::mtl_regions::mtl_now = {mtl_L, mtl_sw, mtl_tx, mtl_ty, mtl_tz, mtl_gx, mtl_gy, mtl_gz, mtl_x0, "
         "mtl_y0, mtl_z0, mtl_ax, mtl_ay, mtl_az};\n"
         "    metal::mtl_rt::group_threads = mtl_ax * mtl_ay * mtl_az;\n"
         "    const unsigned mtl_lx = 0, mtl_ly = 0, mtl_lz = 0;\n"
         "    (void)mtl_lx; (void)mtl_ly; (void)mtl_lz;\n"
         "    "
      << e.call << "\n  }\n}\n";
  }

  // Barriers or SIMD-group functions: each thread of a group is a fiber.
  void emit_fiber_entry_point(std::ostream& o, const EntryPoint& e) const {
    const std::string ctx = "metalcall_group_" + std::to_string(e.index);
    const std::string body = "metalcall_thread_" + std::to_string(e.index);
    o << "struct " << ctx << " { const metalcall_cpu_launch* mtl_L; unsigned mtl_gx, mtl_gy, mtl_gz, mtl_x0, mtl_y0, mtl_z0, mtl_ax, mtl_ay, mtl_az; };\n";
    o << "static void " << body << "(void* mtl_c_, unsigned mtl_tid) {\n"
      << "  const " << ctx << "& mtl_c = *static_cast<const " << ctx << "*>(mtl_c_);\n"
      << "  const metalcall_cpu_launch* mtl_L = mtl_c.mtl_L;\n"
         "  const metalcall_cpu_worker* mtl_W = metal::mtl_rt::worker;\n  (void)mtl_W;\n"
      << kSimdWidth <<
         "  const unsigned mtl_tx = mtl_L->group[0], mtl_ty = mtl_L->group[1], mtl_tz = mtl_L->group[2];\n"
         "  const unsigned mtl_nx = mtl_L->grid[0], mtl_ny = mtl_L->grid[1], mtl_nz = mtl_L->grid[2];\n"
         "  (void)mtl_nx; (void)mtl_ny; (void)mtl_nz;\n"
         "  const unsigned mtl_gx = mtl_c.mtl_gx, mtl_gy = mtl_c.mtl_gy, mtl_gz = mtl_c.mtl_gz, mtl_x0 = mtl_c.mtl_x0, mtl_y0 = mtl_c.mtl_y0, mtl_z0 = mtl_c.mtl_z0;\n"
         "  const unsigned mtl_ax = mtl_c.mtl_ax, mtl_ay = mtl_c.mtl_ay, mtl_az = mtl_c.mtl_az;\n"
         "  const unsigned mtl_lx = mtl_tid % mtl_ax, mtl_ly = (mtl_tid / mtl_ax) % mtl_ay, mtl_lz = mtl_tid / (mtl_ax * mtl_ay);\n"
         "  (void)mtl_tx; (void)mtl_ty; (void)mtl_tz; (void)mtl_gx; (void)mtl_gy; (void)mtl_gz; (void)mtl_x0; (void)mtl_y0; (void)mtl_z0; (void)mtl_az;\n"
         "  (void)mtl_lx; (void)mtl_ly; (void)mtl_lz;\n"
      << e.argument_setup << "  " << e.call << "\n}\n";
    o << "extern \"C\" __attribute__((visibility(\"default\"))) void " << cpu_entry_symbol(e.index) << kSignature
      << " {\n" << checked_setup(e) << "  metal::mtl_rt::worker = mtl_W;\n" << kSimdLanes << kGroupLoop << e.group_start
      << "    " << ctx << " mtl_c = {mtl_L, mtl_gx, mtl_gy, mtl_gz, mtl_x0, mtl_y0, mtl_z0, mtl_ax, mtl_ay, mtl_az};\n"
         "    const unsigned mtl_count = mtl_ax * mtl_ay * mtl_az;\n"
         "    metal::mtl_rt::group_threads = mtl_count;\n"
         "    mtl_W->run_group(mtl_W->fibers, mtl_count, mtl_L->simd_width, " << body << ", &mtl_c);\n"
         "  }\n}\n";
  }
};

}  // namespace

std::unique_ptr<Target> make_cpu_target(bool checked) { return std::make_unique<CpuTarget>(checked); }

}  // namespace metalcall::msl
