// What differs between the translator's targets: host C++ for the CPU backend
// (target_cpu.cpp) and CUDA C++ for NVRTC (target_cuda.cpp). The Translator
// (translator.cpp) does everything else and asks a Target at these points only.
#pragma once

#include <cstddef>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "metalcall/reflection.hpp"

namespace metalcall::msl {

/** One kernel's entry point, as the shared code prepared it (entry_points.cpp). */
struct EntryPoint {
  std::size_t index = 0;       // the kernel's number: cpu_entry_symbol(index), cpu_layout_symbol(index)
  std::string kernel_name;     // the name the user calls it by
  bool uses_fibers = false;    // barriers or SIMD-group functions: threads must wait for each other
  // The kernel's body runs once per group, its regions between barriers each a loop over the
  // group's threads (CPU; msl/passes/barrier_regions.hpp). uses_fibers is false then.
  bool regions = false;
  std::string argument_setup;  // statements declaring p0, p1, … from the launch `L` (and worker `W`)
  std::string call;            // `f(p0, p1, …);`
  // Threads of this kernel may run several in a row on one thread of the target (CUDA's
  // coarsened launch): proven by entry_points.cpp, set only where the target asks for it.
  bool coarsenable = false;
  std::string aligned_argument_setup;  // argument_setup, buffer addresses assumed 16-byte aligned
  // Statements at the start of each threadgroup, before any of its threads runs (empty but under
  // METALCALL_POISON_THREADGROUP: Target::threadgroup_poison).
  std::string group_start;
};

/** A non-builtin kernel parameter and its element type's C++ text (for a parameter block). */
struct ParamSlot {
  ParamInfo info;
  std::string element;
};

class Target {
 public:
  virtual ~Target() = default;

  /** "CPU" or "CUDA", for messages about what the backend does not support. */
  virtual const char* name() const = 0;

  /**
   * True when a user's name would clash with one the target's compiler declares in the
   * global namespace (NVRTC's y0, j1, erf, dim3, threadIdx): the translator writes such a
   * name as user_name_in_target(name), and reflection keeps the user's spelling.
   */
  virtual bool clashes_with_target(const std::string&) const { return false; }

  /**
   * Library functions whose unqualified calls the target's compiler finds ambiguous (a global
   * function of the same signature): the translator writes them metal::NAME (library_calls.hpp).
   */
  virtual const std::set<std::string>& ambiguous_library_calls() const {
    static const auto& none = *new std::set<std::string>;
    return none;
  }

  /**
   * True when integer `/` and `%` must not trap (the CPU: SIGFPE would kill the
   * process); the translator then routes them through metal_division.h.
   */
  virtual bool guards_division() const = 0;

  /**
   * True when the compiler takes GNU range designators (`{ [0 ... N-1] = v }`, host
   * g++/clang++, unchecked); else the translator rewrites local ones as loops (range_designators.hpp).
   */
  virtual bool takes_range_designators() const = 0;

  /**
   * True when half converts both ways with int and float (CUDA's __half), so that an integer
   * literal branch of `?:` is wrapped to take the other branch's type, and branches of mixed
   * types are cast to MSL's type (conditional_literals.hpp).
   */
  virtual bool wraps_conditional_literals() const = 0;
  /**
   * True when a warp's lanes need not meet again after a branch holding a threadgroup
   * barrier (CUDA since Volta): such branch bodies end with a rejoin of the lanes that
   * entered (branch_reconvergence.hpp).
   */
  virtual bool rejoins_barrier_branches() const { return false; }
  /**
   * True when SIMD-group functions meet at their call's line, the earliest line first (the
   * CPU's fibers): loops that may call one get a rendezvous at their last line each
   * iteration (simd_latches.hpp).
   */
  virtual bool latches_simd_loops() const { return false; }
  /**
   * True when lambdas without captures get one that nothing reads (the CPU, where a function
   * pointer made from an integer calls host code; msl/passes/lambda_captures.hpp).
   */
  virtual bool blocks_lambda_conversions() const { return false; }
  /**
   * True when the host compiler's -Werror=vla is what refuses variable-length arrays (the CPU):
   * a diagnostic pragma of the source's would lower it (`ignored "-Wvla"`, "-Wpedantic",
   * "-Weverything" with clang), so each is followed by one that restores it.
   */
  virtual bool restores_vla_error() const { return false; }
  /**
   * True when kernels whose only synchronisation is threadgroup barriers at their top level (or
   * in uniform loops there) run as regions between barriers, each a loop over the group's
   * threads, instead of fibers (the CPU; msl/passes/barrier_regions.hpp).
   */
  virtual bool forms_barrier_regions() const { return false; }
  /**
   * True when `simdgroup_multiply_accumulate(X[i], a, b, X[i])` goes to the prelude with the
   * whole array X, whose neighbouring accumulators may share a tensor-core operation
   * (CUDA; accumulator_elements.hpp).
   */
  virtual bool pairs_accumulator_elements() const { return false; }
  /**
   * True when a loop nest around one `simdgroup_multiply_accumulate` or one
   * `simdgroup_load` goes to the prelude whole (CUDA; product_nests.hpp).
   */
  virtual bool hands_over_loop_nests() const { return false; }
  /**
   * True when `*(threadgroup T*)(d) = *(device [const] T*)(s);` goes to the prelude's
   * mtl_async_copy, which may issue it asynchronously (CUDA; async_copies.hpp).
   */
  virtual bool hands_over_async_copies() const { return false; }
  /** Only the integer literal branches of those (`c ? b : 0` with b a bfloat, a class on every target). */
  virtual bool wraps_conditional_int_literals() const { return wraps_conditional_literals(); }
  /** Only the branches of mixed types (`c ? bfloat_value : float_value`; bfloat is a class on every target). */
  virtual bool casts_conditional_arms() const { return wraps_conditional_literals(); }

  /**
   * False when threadgroup storage takes no initializer (CUDA's __shared__): the translator
   * leaves `= {0}` of `threadgroup float s[32] = {0};` out there (Apple's compiler takes it).
   */
  virtual bool takes_threadgroup_initializers() const = 0;

  /** What `1.5h` becomes, applied to `1.5f`: a conversion to half (constexpr on CUDA, metal_half_cuda.h). */
  virtual const char* half_literal() const = 0;

  /** The start of the translation unit: the launch ABI, the prelude, helper macros. */
  virtual void emit_preamble(std::ostream& o) const = 0;

  /** What `threadgroup` becomes where it declares storage (`threadgroup float tmp[64];`). */
  virtual const char* threadgroup_storage() const = 0;

  /**
   * True when each threadgroup variable declared in a function is followed by
   * METAL_THREADGROUP_FITS(name) (the CPU: a variable over Apple GPUs' 32 KiB makes the
   * call an ExecutionError, as Metal refuses its pipeline; CUDA: NVRTC refuses static
   * shared memory over 48 KiB itself).
   */
  virtual bool checks_threadgroup_sizes() const { return false; }

  /** The address space of program-scope `constant` data, or nullptr for none (plain const). */
  virtual const char* program_scope_data() const = 0;
  /**
   * Program-scope `constant` data is declared constexpr rather than const: CUDA initialises
   * __device__ data only from constant expressions, and a const float is none (`constant float
   * b = a * 2;`, `half(a)` of another constant), where Apple's compiler folds them.
   */
  virtual bool constant_data_constexpr() const { return false; }

  /**
   * Loops are strip-mined (msl/passes/loop_strips.hpp) so that their stop check runs once
   * per strip: the CPU, where a check in a loop keeps the compiler from vectorising it, and
   * CUDA, where it keeps NVRTC from unrolling it.
   */
  virtual bool strip_mines_loops() const { return false; }
  /**
   * Only innermost loops are strip-mined (CUDA: a loop with a loop inside checks each
   * iteration on its nest's counter, and loops of SIMD-group or barrier functions stay as
   * written for the rewrites that match them).
   */
  virtual bool strips_innermost_loops_only() const { return false; }

  /**
   * A cast of an address to a pointer of 1- or 2-byte items takes the address through an
   * opaque step, so the bytes are read from memory (CUDA: a half's bytes read from its f16
   * register came back wrong; Translator::launder_punned_addresses).
   */
  virtual bool launders_punned_addresses() const { return false; }

  /**
   * Unary minus goes through the prelude (`(metal::mtl_rt::neg_tag{} -x)`, passes/small_negations.hpp),
   * so that a char or short is negated in 32 bits (CUDA: NVVM's neg.s16 lost the wrap of -32768).
   */
  virtual bool wraps_small_negations() const { return false; }

  /**
   * Conversions from a floating type to int, uint, long and ulong (and their other names) take
   * their argument through `metal::mtl_rt::int_arg<T>(x)` (metal_conversion.h; found by
   * passes/conversion_sites.hpp), which gives MSL's value: a NaN 0, out of range saturated, as
   * Apple's and NVIDIA's GPUs convert (the CPU: x86's cvttss2si gives INT_MIN for both; CUDA:
   * a NaN to a 64-bit integer, or a double NaN to a 32-bit one, gives the minimum).
   */
  virtual bool conditions_float_to_int() const { return false; }

  /**
   * Declarations the entry point needs before the layout table (the CUDA target's
   * parameter block of kernel `index`); nothing for the CPU.
   */
  virtual void emit_parameter_block(std::ostream& o, std::size_t index, const std::vector<ParamSlot>& params) const = 0;

  /** The address of buffer parameter `p`'s memory. */
  virtual std::string buffer_address(const ParamInfo& p) const = 0;

  /** Written after the '*' of each buffer parameter of a kernel function (a restrict qualifier), or "". */
  virtual const char* kernel_pointer_qualifier() const = 0;
  /** Threads per SIMD-group in the entry point's code (the SIMD-group builtins): 32 (a warp), or the launch's. */
  virtual const char* simd_width_expression() const { return "32u"; }
  /** The grid's size in dimension d (threads_per_grid): the launch's field, or a local the CPU's
   *  entry point reads once (a call in the kernel's loops, the stop check's, would make the
   *  compiler read the field again for every thread). */
  virtual std::string grid_size_expression(int d) const { return "mtl_L->grid[" + std::to_string(d) + "]"; }

  /** The address of the bytes of by-value or reference parameter `p`. */
  virtual std::string value_address(const ParamInfo& p) const = 0;

  /** The address of [[threadgroup(i)]] parameter `p`'s memory. */
  virtual std::string threadgroup_address(const ParamInfo& p) const = 0;

  /**
   * When poisoning (below): what starts each threadgroup of a kernel whose [[threadgroup(i)]]
   * parameters are `memory` (maybe none), so that its threadgroup memory reads as 0xFF bytes until
   * the group writes it (metal_poison.h). EntryPoint::group_start.
   */
  virtual std::string threadgroup_poison(const std::vector<ParamInfo>& memory) const = 0;
  /**
   * True where every translation carries the poisoning and each launch switches it on or off (the
   * CPU: metalcall_cpu_launch::poison_threadgroup), so poisoned and plain runs share one
   * translation; false where it is compiled in under METALCALL_POISON_THREADGROUP alone (CUDA).
   */
  virtual bool poisons_threadgroup_per_launch() const { return false; }

  /** A layout table's declaration up to its name, and the integer type of its bindings. */
  virtual const char* layout_declaration() const = 0;
  virtual const char* binding_type() const = 0;
  /** What follows `{size, align, binding` in kernel `index`'s entry for `p` (before `}`). */
  virtual std::string layout_entry_tail(std::size_t index, const ParamInfo& p) const = 0;
  /** The entry that ends kernel `index`'s layout table. */
  virtual std::string layout_terminator(std::size_t index) const = 0;

  /** The exported function that runs the kernel's threads (after its layout table). */
  virtual void emit_entry_point(std::ostream& o, const EntryPoint& entry) const = 0;

  /**
   * True when the target writes a second, coarsened entry point for kernels that allow one
   * (EntryPoint::coarsenable; CUDA, target_cuda.cpp).
   */
  virtual bool emits_coarsened_entries() const { return false; }
};

/** Host C++ for the CPU backend; `checked` adds bounds checks (checked mode). */
std::unique_ptr<Target> make_cpu_target(bool checked);

/** CUDA C++ for NVRTC (-default-device). */
std::unique_ptr<Target> make_cuda_target();

}  // namespace metalcall::msl
