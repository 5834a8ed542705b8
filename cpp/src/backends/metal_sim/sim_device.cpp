// The Metal simulator's device, Device("metal-sim"): a Metal device of one GPU family
// (sim_families.hpp) whose calls go through the Metal backend's planner (backends/metal_plan)
// and whose plans the simulator's driver executes (sim_driver.hpp). Kernels are built and run
// by a CPU device of its own. One device per family: Devices opened with other options
// (timing=True) share it, and so its one queue, as on Metal (P2.1 item 6).
#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/metal_plan/device_rules.hpp"
#include "backends/metal_plan/function_constants.hpp"
#include "backends/metal_plan/library_reflection.hpp"
#include "backends/metal_plan/planner.hpp"
#include "backends/metal_sim/sim_driver.hpp"
#include "backends/metal_sim/sim_families.hpp"
#include "backends/translated/host_cxx.hpp"
#include "core/backend.hpp"
#include "core/registry.hpp"
#include "metalcall/errors.hpp"
#include "msl/parse/function_constants.hpp"
#include "msl/translate/front_end.hpp"

namespace metalcall::metal_sim {
namespace {

// SIMD-group matrices are Apple7+ GPUs' (32 lanes): pipelines of a source that uses them run 32 wide on
// every family (the CPU backend's matrices refuse other widths, loudly, should a spelling escape this).
constexpr unsigned kMatrixSimdWidth = 32;

bool uses_simdgroup_matrices(const std::string& source) {
  for (const char* name : {"simdgroup_matrix", "simdgroup_float8x8", "simdgroup_half8x8", "simdgroup_bfloat8x8",
                           "simdgroup_load", "simdgroup_store", "simdgroup_multiply", "make_filled_simdgroup_matrix"})
    if (source.find(name) != std::string::npos) return true;
  return false;
}
// Registry ids of simulated devices: far from the ids macOS gives real GPUs.
constexpr std::uint64_t kRegistryIdBase = 0x5100000000000000ull;

// The bindings a Metal pipeline of this kernel would reflect: those the CPU's table has, in the
// form MTLComputePipelineReflection gives them (parameters a false function constant removes are
// not in the pipeline).
std::vector<metal::BindingInfo> pipeline_bindings(const KernelInfo& cpu) {
  std::vector<metal::BindingInfo> bindings;
  for (const ParamInfo& param : cpu.params) {
    if (param.kind == ParamKind::builtin || !param.enabled) continue;
    metal::BindingInfo b;
    b.index = param.binding;
    b.name = param.name;
    b.read_only = param.is_const;
    switch (param.kind) {
      case ParamKind::threadgroup_memory: b.kind = metal::BindingInfo::Kind::threadgroup_memory; break;
      case ParamKind::texture: b.kind = metal::BindingInfo::Kind::texture; break;
      case ParamKind::sampler: b.kind = metal::BindingInfo::Kind::sampler; break;
      default: b.kind = metal::BindingInfo::Kind::buffer; break;
    }
    if (b.kind == metal::BindingInfo::Kind::buffer || b.kind == metal::BindingInfo::Kind::threadgroup_memory) {
      b.data_size = param.element_size;
      b.alignment = param.element_align;
      b.scalar = param.scalar;
      b.vector_width = param.vector_width;
      b.type_name = param.type_name;
    }
    bindings.push_back(std::move(b));
  }
  return bindings;
}

/**
 * A library as the Metal backend makes one (metal_compiler.mm): the compiler (here the CPU
 * backend's) builds the source; the kernels and their tables come from the front end's
 * reflection of the preprocessed source, checked against the compiler's kernel list; each
 * pipeline's table is merged with the pipeline's reflection (here the CPU program's table).
 */
class SimLibrary final : public BackendLibrary {
 public:
  SimLibrary(std::shared_ptr<BackendLibrary> cpu, msl::SourceReflection reflected, const GpuFamily& family,
             std::uint64_t registry_id, bool matrices)
      : cpu_(std::move(cpu)), reflected_(std::move(reflected)), family_(family), registry_id_(registry_id),
        matrices_(matrices) {
    for (const KernelInfo& kernel : reflected_.kernels) names_.push_back(kernel.name);
    for (const msl::FunctionConstantDecl& c : reflected_.function_constants)
      declared_.push_back({c.name, c.index, c.scalar, c.type_name, c.vector_width});
  }

  std::vector<std::string> function_names() const override { return names_; }

  std::shared_ptr<Program> make_program(const std::string& name,
                                        const std::vector<FunctionConstant>& constants) override {
    const auto& atomic64 = reflected_.atomic64_kernels;
    if (!family_.atomic64_min_max && std::find(atomic64.begin(), atomic64.end(), name) != atomic64.end())
      throw CompileError("[metal-sim] unable to build the pipeline of kernel '" + name + "': it uses 64-bit atomics "
                         "(atomic_min_explicit / atomic_max_explicit on atomic_ulong), which GPUs of family " +
                         family_.name + " (" + family_.gpu + ") do not have: Metal has them on Apple8 Macs (M2) and "
                         "Apple9 GPUs (Device(\"metal-sim\", family=\"apple9\"))");
    // The values as the Metal driver would pass them (metal::specialisation: matched, each
    // packed to its MTLDataType, a vector's count checked) before the CPU bakes them in.
    std::vector<metal::FunctionConstantSlot> slots;
    for (const msl::FunctionConstantInfo& c : declared_) {
      metal::FunctionConstantSlot slot;
      slot.name = c.name, slot.index = static_cast<std::size_t>(c.index), slot.used = true;
      slot.metal_type = metal::metal_data_type(c.scalar, c.vector_width);
      slot.scalar = slot.metal_type ? c.scalar : ScalarType::unknown;  // no MTLDataType: Metal cannot set it
      slot.width = c.vector_width, slot.type_name = c.type_name;
      slots.push_back(std::move(slot));
    }
    const std::vector<metal::FunctionConstantSlot> known = metal::known_constants(std::move(slots), {});
    std::vector<msl::FunctionConstantInfo> infos;  // in known's order, for the matcher
    for (const metal::FunctionConstantSlot& k : known)
      infos.push_back({k.name, static_cast<int>(k.index), k.scalar, k.type_name, k.width});
    (void)metal::specialisation(name, known, constants, msl::match_constants(infos, constants));
    std::shared_ptr<Program> cpu = cpu_->make_program(name, constants);
    if (cpu->info().texture_atomics && !family_.texture_atomics)
      throw CompileError("[metal-sim] kernel '" + name + "' uses texture atomics (MSL 3.1), which " + family_.name +
                         " GPUs do not have (MSL 3.1 needs macOS 14 / iOS 17, which no Apple3 GPU runs)");
    for (const ParamInfo& param : cpu->info().params)
      if (param.kind == ParamKind::texture && param.enabled &&
          param.binding + std::max(param.texture_count, 1) > static_cast<int>(family_.texture_entries))
        throw CompileError("[metal-sim] unable to build the pipeline of kernel '" + name + "': texture(" +
                           std::to_string(param.binding) + ") '" + param.name + "' lies past the " +
                           std::to_string(family_.texture_entries) + " entries of the texture argument table of " +
                           family_.name + " GPUs (Metal's implementation limits; Macs have 128)");
    KernelInfo info;
    for (const KernelInfo& kernel : reflected_.kernels)
      if (kernel.name == name) info = kernel;  // core has checked the name against function_names()
    msl::enable_params(info, declared_, constants);
    metal::merge_reflection(info, pipeline_bindings(cpu->info()), "[metal-sim]");
    const PipelineShape shape = pipeline_shape(family_, name);
    const unsigned cpu_limit = cpu->info().max_total_threads_per_threadgroup;
    info.max_total_threads_per_threadgroup =
        std::min(cpu_limit ? cpu_limit : 1024u, shape.max_total_threads_per_threadgroup);
    info.thread_execution_width = matrices_ ? kMatrixSimdWidth : shape.thread_execution_width;
    return std::make_shared<SimProgram>(std::move(cpu), std::move(info), registry_id_);
  }

 private:
  std::shared_ptr<BackendLibrary> cpu_;
  msl::SourceReflection reflected_;
  std::vector<std::string> names_;
  std::vector<msl::FunctionConstantInfo> declared_;
  const GpuFamily& family_;
  std::uint64_t registry_id_;
  bool matrices_;  // the source uses SIMD-group matrices
};

DeviceInfo describe(const GpuFamily& family, std::uint64_t registry_id, const DeviceInfo& host) {
  DeviceInfo info;
  info.name = "Metal simulator: " + family.gpu + " (" + family.name + ")";
  info.backend = "metal-sim";
  info.index = 0;
  info.architecture = family.architecture;
  info.max_threads_per_threadgroup = family.max_threads_per_threadgroup;
  // What a probe pipeline of the family reports, as Metal's device-wide figure did before P2.1
  // item 4: not always what a given pipeline runs with (Kernel.thread_execution_width).
  info.simd_width = family.probe_simd_width;
  info.unified_memory = family.unified_memory;
  info.memory_size = host.memory_size;
  info.max_buffer_length = family.max_buffer_length;
  info.threadgroup_memory_length = family.threadgroup_memory_length;
  info.registry_id = registry_id;
  return info;
}

std::uint64_t registry_id_of(const GpuFamily& family) { return kRegistryIdBase + family.ordinal; }

class SimDevice final : public BackendDevice {
 public:
  SimDevice(const GpuFamily& family, std::shared_ptr<BackendDevice> cpu)
      : family_(family),
        cpu_(std::move(cpu)),
        info_(describe(family, registry_id_of(family), cpu_->info())),
        queue_(cpu_, family, info_.registry_id, info_.name) {
    // As metal_device.mm, from what the device reports (the driver checks dispatches against the
    // family's own table). No malloc_size here: host memory that is not whole pages is staged.
    target_ = metal::plan_target(info_, family.page_size, nullptr);
  }

  const DeviceInfo& info() const override { return info_; }

  std::shared_ptr<BufferStorage> allocate(std::size_t nbytes) override {
    metal::buffer_length(nbytes, info_, "[metal-sim]");  // refuses what Metal would
    return std::make_shared<SimBufferStorage>(nbytes, family_.page_size, info_.registry_id);
  }
  std::shared_ptr<BufferStorage> allocate_uninitialized(std::size_t nbytes) override {
    std::shared_ptr<BufferStorage> storage = allocate(nbytes);
    if (poison_uninitialized() && nbytes) std::memset(storage->data(), 0xFF, nbytes);  // (core/backend.hpp)
    return storage;
  }

  std::string compiler_identity() override { return "metal-sim;" + family_.name + ";" + cpu_->compiler_identity(); }

  std::shared_ptr<BackendLibrary> compile(const std::string& source, const CompileOptions& options) override {
    std::shared_ptr<BackendLibrary> cpu = cpu_->compile(source, options);  // newLibraryWithSource
    // As metal_compiler.mm: the front end's reflection of the source as the compiler saw it (the
    // CPU backend defines __METAL_VERSION__ 320 whatever language_version says), checked against
    // the compiled library's kernels.
    msl::SourceReflection reflected =
        msl::reflect_source(source, options.defines, translated::host_preprocessor("metal-sim"), 320);
    std::vector<std::string> names;
    for (const KernelInfo& kernel : reflected.kernels) names.push_back(kernel.name);
    metal::check_kernel_names(names, cpu->function_names(), "[metal-sim]");
    return std::make_shared<SimLibrary>(std::move(cpu), std::move(reflected), family_, info_.registry_id,
                                        uses_simdgroup_matrices(source));
  }

  void check_texture(const TextureDescriptor& descriptor) override {
    metal::check_metal_texture(descriptor);
    metal::check_metal_pixel_format(descriptor, {family_.apple_gpu, family_.apple_gpu, family_.apple_gpu}, family_.name);
    if (!family_.cube_arrays && (descriptor.type == TextureType::texturecube_array || descriptor.type == TextureType::depthcube_array))
      throw ArgumentError("[metal-sim] " + family_.name + " GPUs have no cube texture arrays (Apple4 and later, Mac2 have them)");
  }
  std::size_t texture_row_alignment(const PixelFormat&) override { return family_.linear_texture_alignment; }

  void submit(std::vector<DispatchCommand>&& commands, const std::shared_ptr<CompletionState>& completion,
              bool /*caller_waits*/) override {
    queue_.submission_arrived();
    queue_.commit(metal::make_plan(std::move(commands), target_), completion);
  }

  void synchronize() override { queue_.synchronize(); }

 private:
  const GpuFamily& family_;
  std::shared_ptr<BackendDevice> cpu_;
  DeviceInfo info_;
  metal::PlanTarget target_;
  SimQueue queue_;
};

// One device per family for the process, whatever options open it (as metal_device.mm: one per GPU).
std::shared_ptr<BackendDevice> open_device(const DeviceOptions& options) {
  const GpuFamily& family = find_family(options.family.empty() ? default_family() : options.family);
  return metal::one_device_per_gpu("metal-sim:" + family.name, [&] {
    return std::make_shared<SimDevice>(family, open_private_backend_device("cpu", 0, DeviceOptions{}));
  });
}

}  // namespace
}  // namespace metalcall::metal_sim

namespace metalcall {

void register_metal_sim_backend() {
  BackendEntry entry;
  entry.name = "metal-sim";
  entry.priority = -100;
  entry.listed = false;  // opened by name only: never the default device, never in get_devices()
  entry.enumerate = [] {
    DeviceInfo info;
    info.name = "Metal simulator";
    info.backend = "metal-sim";
    return std::vector<DeviceInfo>{info};
  };
  entry.unavailable_reason = [] { return std::string(); };
  entry.open = [](int, const DeviceOptions& options) { return metal_sim::open_device(options); };
  register_backend(std::move(entry));
}

}  // namespace metalcall
