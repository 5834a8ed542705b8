// Kernel lookup and the call path: validation, binding, submission.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>

#include "core/impl.hpp"
#include "core/scalar_packing.hpp"
#include "core/texture_binding.hpp"
#include "metalcall/errors.hpp"

namespace metalcall {

namespace {

// Exact: every field of each value, floats by their bits (to_string would round).
void add_value(std::string& key, const Argument& value) {
  key += std::to_string(static_cast<int>(value.kind)) + 't' + std::to_string(static_cast<int>(value.typed_scalar)) +
         (value.int_is_unsigned ? "u" : "s") +
         std::to_string(value.int_value) + ':';
  key.append(reinterpret_cast<const char*>(&value.float_value), sizeof value.float_value);
  key += std::to_string(value.data.size()) + ':';
  key.append(reinterpret_cast<const char*>(value.data.data()), value.data.size());
}

std::string constants_key(const std::vector<FunctionConstant>& constants) {
  std::string key;
  for (const auto& c : constants) {
    key += '\x1f' + c.name + '#' + std::to_string(c.index) + '=';
    add_value(key, c.value);
    key += 'v' + std::to_string(c.components.size()) + ':';  // a vector's components, each as a value
    for (const Argument& component : c.components) add_value(key, component);
  }
  return key;
}

std::string param_signature(const ParamInfo& p) {
  std::string s = p.name + ": ";
  if (p.kind == ParamKind::buffer) s += std::string(p.is_const ? "const " : "") + to_string(p.address_space) + " " + p.type_name + "*";
  else if (p.kind == ParamKind::reference) s += std::string(to_string(p.address_space)) + " " + p.type_name + "&";
  else s += p.type_name;
  return s;
}

std::string numpy_name(ScalarType s) {
  switch (s) {
    case ScalarType::boolean: return "bool_";
    case ScalarType::i8: return "int8";
    case ScalarType::u8: return "uint8";
    case ScalarType::i16: return "int16";
    case ScalarType::u16: return "uint16";
    case ScalarType::i32: return "int32";
    case ScalarType::u32: return "uint32";
    case ScalarType::i64: return "int64";
    case ScalarType::u64: return "uint64";
    case ScalarType::f16: return "float16";
    case ScalarType::f32: return "float32";
    default: return to_string(s);
  }
}

// How to give the kernel elements of type s: NumPy's dtype, or (bfloat, which NumPy lacks) the
// element's 16-bit patterns as raw bytes.
std::string conversion_advice(ScalarType s) {
  if (s == ScalarType::bf16)
    return "; NumPy has no bfloat dtype: pass the values' bfloat bit patterns as raw bytes (e.g. "
           "torch.bfloat16 or ml_dtypes.bfloat16 data, or a uint16 array of the bits, .view(np.uint8))";
  return "; convert it (e.g. .astype(np." + numpy_name(s) + ")) or pass raw bytes (.view(np.uint8)) to reinterpret it";
}

std::string describe(const KernelInfo& k, const ParamInfo& p) {
  return "kernel '" + k.name + "' argument " + std::to_string(p.binding) + " '" + p.name + "' (" +
         param_signature(p) + ")";
}

}  // namespace

std::shared_ptr<KernelImpl> LibraryImpl::function(const std::string& name, const std::vector<FunctionConstant>& constants) {
  const std::string key = name + constants_key(constants);
  {
    std::lock_guard<std::mutex> lock(kernels_mutex_);
    auto it = kernels_.find(key);
    if (it != kernels_.end()) return it->second;
  }
  const std::vector<std::string> names = backend_->function_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    std::string listing;
    for (const auto& n : names) listing += (listing.empty() ? "" : ", ") + n;
    throw ArgumentError("no kernel named '" + name + "' in this library; it has: " +
                        (listing.empty() ? std::string("(none)") : listing));
  }
  auto program = backend_->make_program(name, constants);
  auto kernel = std::make_shared<KernelImpl>(device_, std::move(program));
  std::lock_guard<std::mutex> lock(kernels_mutex_);
  return kernels_.emplace(key, std::move(kernel)).first->second;
}

KernelImpl::KernelImpl(std::shared_ptr<DeviceImpl> device, std::shared_ptr<Program> program)
    : device_(std::move(device)), program_(std::move(program)) {
  buffer_params_ = program_->info().buffer_params();
  threadgroup_params_ = program_->info().threadgroup_params();
  has_resource_params_ = !program_->info().texture_params().empty() || !program_->info().sampler_params().empty();
  repeatable_ = !has_resource_params_ && threadgroup_params_.empty() && !device_->options().checked;
  for (const ParamInfo* p : buffer_params_) repeatable_ = repeatable_ && p->enabled && p->kind == ParamKind::buffer;
}

namespace {

// The command of a call that runs at once, kept per thread so that such a call
// allocates nothing; cleared when the call ends, so it never holds anything between
// calls. A call made while another uses it (none today: kernel code cannot call
// back) binds into a command of its own.
struct ScratchCommand {
  DispatchCommand command;
  bool in_use = false;
};
thread_local ScratchCommand t_scratch;

class CallCommand {
 public:
  // t_scratch named once: each mention of a thread_local is a call to __tls_get_addr here.
  CallCommand() : scratch_(claim(t_scratch)) {}
  ~CallCommand() {
    DispatchCommand& c = get();
    c.program.reset();
    for (BoundArgument& a : c.args) a.reset();  // holds nothing between calls; kept for the next one
    if (scratch_) scratch_->in_use = false;
  }
  CallCommand(const CallCommand&) = delete;
  CallCommand& operator=(const CallCommand&) = delete;
  DispatchCommand& get() { return scratch_ ? scratch_->command : own_; }

 private:
  static ScratchCommand* claim(ScratchCommand& scratch) {
    if (scratch.in_use) return nullptr;
    scratch.in_use = true;
    return &scratch;
  }
  ScratchCommand* scratch_;
  DispatchCommand own_;
};

// A command bound with borrow=true points at the program and buffers without owning
// them (the caller's Kernel and Arguments hold them for the call, and a call run at
// once needs no more). Queued work outlives the call: it owns them from here on.
void take_ownership(const KernelImpl& kernel, const std::vector<Argument>& args, DispatchCommand& command) {
  command.program = kernel.program();
  const auto& buffer_params = kernel.buffer_params();
  for (std::size_t i = 0; i < buffer_params.size() && i < args.size(); ++i) {  // trailing absent ones bind nothing
    if (args[i].kind == Argument::Kind::buffer) command.args[buffer_params[i]->position].buffer = args[i].buffer.storage();
  }
  own_textures(command);
}

}  // namespace

// ---- Repeated calls ----
// Binding a call checks every argument against its parameter (device, element type, size,
// alignment, the grid's extent). A call whose grid and Buffers equal the last fast-path call's
// in everything those checks read (each Buffer's address, size, device and element type) would
// bind the same command and pass the same checks: it is bound directly. Equality, not identity:
// a new Buffer at a freed one's address (the allocator's cache) with the same size and type
// binds the same way. Only pointer parameters and Buffer arguments, automatic threadgroups.

bool KernelImpl::repeat_eligible(const LaunchShape& shape, const std::vector<Argument>& args) const {
  if (!repeatable_ || args.size() != buffer_params_.size()) return false;
  if (shape.threadgroup[0] || shape.threadgroup[1] || shape.threadgroup[2]) return false;
  if (!shape.threadgroup_memory.empty() || !shape.textures.empty() || !shape.samplers.empty()) return false;
  for (const Argument& a : args)
    if (a.kind != Argument::Kind::buffer || !a.buffer || !a.host_foreign_type.empty()) return false;
  return true;
}

namespace {
void choose_threadgroup(const KernelInfo& k, unsigned automatic_limit, const DeviceInfo& dev, const LaunchShape& shape,
                        std::uint32_t out[3]);
template <class T>
std::shared_ptr<T> borrowed(const std::shared_ptr<T>& p);
}  // namespace

bool KernelImpl::matches_last(const LaunchShape& shape, const std::vector<Argument>& args) {
  for (int d = 0; d < 3; ++d)
    if (last_grid_[d] != shape.grid[d]) return false;
  if (last_buffers_.size() != args.size()) return false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const BufferStorage& s = *args[i].buffer.storage();
    const BufferKey& k = last_buffers_[i];
    if (k.data != s.data() || k.nbytes != s.nbytes() || k.home != s.home() || k.scalar != args[i].host_scalar ||
        k.raw != args[i].host_raw_bytes || k.itemsize != args[i].host_itemsize || k.read_only != s.read_only())
      return false;
  }
  return true;
}

void KernelImpl::remember_last(const LaunchShape& shape, const std::vector<Argument>& args,
                               const std::uint32_t threadgroup[3]) {
  for (int d = 0; d < 3; ++d) {
    last_grid_[d] = shape.grid[d];
    last_threadgroup_[d] = threadgroup[d];
  }
  last_buffers_.resize(args.size());
  for (std::size_t i = 0; i < args.size(); ++i) {
    const BufferStorage& s = *args[i].buffer.storage();
    last_buffers_[i] = BufferKey{s.data(), s.nbytes(), s.home(), args[i].host_scalar, args[i].host_raw_bytes,
                                 args[i].host_itemsize, s.read_only()};
  }
}

// What bind_arguments binds for such a call (borrowing), without its checks: they passed for equal inputs.
// `threadgroup`: the automatic threadgroup bound with the remembered call (it depends on the grid alone).
void KernelImpl::bind_repeat(const LaunchShape& shape, const std::vector<Argument>& args, DispatchCommand& command,
                             const std::uint32_t threadgroup[3]) const {
  const KernelInfo& k = info();
  command.program = borrowed(program_);
  for (int d = 0; d < 3; ++d) {
    command.grid[d] = static_cast<std::uint32_t>(shape.grid[d]);
    command.threadgroup[d] = threadgroup[d];
  }
  // A CallCommand's arguments are already reset (its destructor resets them after each call).
  if (command.args.size() != k.params.size()) {
    command.args.clear();
    command.args.resize(k.params.size());
  }
  for (std::size_t i = 0; i < k.params.size(); ++i) command.args[i].kind = k.params[i].kind;
  for (std::size_t i = 0; i < buffer_params_.size(); ++i) {
    BoundArgument& out = command.args[buffer_params_[i]->position];
    out.buffer = borrowed(args[i].buffer.storage());
    out.written = !buffer_params_[i]->is_const;
  }
}

Completion KernelImpl::call(const LaunchShape& shape, const std::vector<Argument>& args) {
  bool empty = false;
  if (auto batch = device_->current_batch()) {
    DispatchCommand command;
    bind_arguments(*this, shape, args, /*borrow=*/false, command, &empty);
    if (!empty) batch->record(std::move(command));
    return Completion(batch->completion());
  }
  CallCommand scratch;
  DispatchCommand& command = scratch.get();
  const bool eligible = repeat_eligible(shape, args);
  bool repeat = false;
  std::uint32_t threadgroup[3];
  if (eligible && !last_busy_.test_and_set(std::memory_order_acquire)) {
    repeat = matches_last(shape, args);
    if (repeat) std::copy(last_threadgroup_, last_threadgroup_ + 3, threadgroup);
    last_busy_.clear(std::memory_order_release);
  }
  if (repeat) {
    bind_repeat(shape, args, command, threadgroup);
  } else {
    bind_arguments(*this, shape, args, /*borrow=*/true, command, &empty);
    if (empty) return Completion::finished(0.0);
    if (eligible && !last_busy_.test_and_set(std::memory_order_acquire)) {
      remember_last(shape, args, command.threadgroup);
      last_busy_.clear(std::memory_order_release);
    }
  }
  double seconds = 0;
  // Finished before returning: no hazards to track, no completion to signal.
  if (device_->backend().run_now(command, &seconds)) return Completion::finished(seconds);
  take_ownership(*this, args, command);
  auto completion = std::make_shared<CompletionState>();
  // Checked mode reports faults at the call that made them.
  const bool caller_waits = command.uses_host_memory() || device_->options().checked;
  std::vector<DispatchCommand> commands;
  commands.push_back(std::move(command));
  device_->submit(std::move(commands), completion, caller_waits);
  // Foreign memory is borrowed only for the duration of the call (DESIGN.md §2).
  if (caller_waits) completion->wait_for_borrowed_memory();
  return Completion(completion);
}

namespace {

void check_grid(const KernelInfo& k, const LaunchShape& shape, bool* empty) {
  *empty = false;
  for (int d = 0; d < 3; ++d) {
    if (shape.grid[d] > std::numeric_limits<std::uint32_t>::max()) {
      throw ArgumentError("kernel '" + k.name + "': grid dimension " + std::to_string(d) + " is " +
                          std::to_string(shape.grid[d]) + " threads; each dimension is limited to 2^32-1 "
                          "(thread positions are 32-bit): split the work or use a 2-D/3-D grid");
    }
    if (shape.grid[d] == 0) *empty = true;
  }
  // The whole grid: at most 2^48 threads (about 2.8e14: days of work on any device),
  // so that every count of threads and threadgroups a backend forms stays exact in 64 bits.
  constexpr std::uint64_t kMaxGridThreads = 1ull << 48;
  if (!*empty) {
    // Dimensions are under 2^32 each: the first product is exact, the second is checked by division.
    const std::uint64_t plane = shape.grid[0] * shape.grid[1];
    if (plane > kMaxGridThreads || shape.grid[2] > kMaxGridThreads / plane) {
      const double shown = static_cast<double>(shape.grid[0]) * double(shape.grid[1]) * double(shape.grid[2]);
      char text[32];
      std::snprintf(text, sizeof text, "%.3g", shown);
      throw ArgumentError("kernel '" + k.name + "': grid (" + std::to_string(shape.grid[0]) + ", " +
                          std::to_string(shape.grid[1]) + ", " + std::to_string(shape.grid[2]) + ") is " + text +
                          " threads; a call runs at most 2^48 (" + std::to_string(kMaxGridThreads) +
                          ") threads in all: split the work over several calls");
    }
  }
}

// Builtins declared ushort hold every value the dispatch gives them, or the call is refused, never
// wrapped: a position up to 65535 (so 65536 threads or threadgroups), a size or count up to
// 65535, in each dimension the declaration has (a scalar is x alone). Before 2026-12-05 thread
// positions refused grids of 65536 (valid) and of any dimension over 65535, and threadgroup
// positions and counts were not checked (70000 groups read group 65535 and a count of 4464).
void check_ushort_builtins(const KernelInfo& k, const LaunchShape& shape, const std::uint32_t threadgroup[3]) {
  for (const auto& p : k.params) {
    if (p.kind != ParamKind::builtin || p.scalar != ScalarType::u16) continue;
    bool groups = false, position = false;
    switch (p.builtin) {
      case Builtin::thread_position_in_grid: position = true; break;
      case Builtin::threads_per_grid: case Builtin::grid_size: break;
      case Builtin::threadgroup_position_in_grid: groups = position = true; break;
      case Builtin::threadgroups_per_grid: groups = true; break;
      default: continue;
    }
    const int dims = std::min(3, std::max(1, p.vector_width));
    for (int d = 0; d < dims; ++d) {
      const std::uint64_t count = groups ? (shape.grid[d] + threadgroup[d] - 1) / threadgroup[d] : shape.grid[d];
      if (count <= (position ? 65536u : 65535u)) continue;
      throw ArgumentError("kernel '" + k.name + "': '" + p.name + "' is declared ushort, but the " +
                          (groups ? "dispatch has " + std::to_string(count) + " threadgroups"
                                  : "grid has " + std::to_string(count) + " threads") +
                          " in dimension " + std::to_string(d) + ", more than it holds; declare it uint" +
                          (groups ? " (or use larger threadgroups)" : ""));
    }
  }
}

void choose_threadgroup(const KernelInfo& k, unsigned automatic_limit, const DeviceInfo& dev, const LaunchShape& shape,
                        std::uint32_t out[3]) {
  const unsigned limit = k.max_total_threads_per_threadgroup ? k.max_total_threads_per_threadgroup
                                                             : dev.max_threads_per_threadgroup;
  const bool automatic = shape.threadgroup[0] == 0 && shape.threadgroup[1] == 0 && shape.threadgroup[2] == 0;
  if (automatic) {
    // Fill x first, as far as the grid needs, then y, then z, up to the backend's preference.
    std::uint64_t remaining = std::max(1u, automatic_limit ? std::min(automatic_limit, limit) : limit);
    for (int d = 0; d < 3; ++d) {
      const std::uint64_t want = std::max<std::uint64_t>(1, std::min<std::uint64_t>(shape.grid[d], remaining));
      out[d] = static_cast<std::uint32_t>(want);
      remaining = std::max<std::uint64_t>(1, remaining / want);
    }
    return;
  }
  std::uint64_t total = 1;
  for (int d = 0; d < 3; ++d) {
    if (shape.threadgroup[d] == 0) {
      throw ArgumentError("kernel '" + k.name + "': threadgroup sizes must be at least 1 in every dimension");
    }
    out[d] = shape.threadgroup[d];
    total *= shape.threadgroup[d];
  }
  if (total > limit) {
    throw ArgumentError("kernel '" + k.name + "': threadgroup of " + std::to_string(total) +
                        " threads is over this kernel's limit of " + std::to_string(limit) +
                        " threads per threadgroup on " + dev.name);
  }
}

// The element type an array bound to `p` must hold: its scalar type, or a matrix's component type.
// Looked up only for typed host data and Buffers (structs take structured or raw data).
ScalarType element_scalar(const ParamInfo& p, const Argument& a) {
  if (p.scalar != ScalarType::unknown || a.host_raw_bytes || a.host_scalar == ScalarType::unknown) return p.scalar;
  // The front end's (aliases resolved: `typedef float4x4 M; constant M& m` was unchecked), else the name's.
  return p.matrix_scalar != ScalarType::unknown ? p.matrix_scalar : matrix_component(p.type_name);
}

// Elements MSL has no scalar for (complex, str, …) bind only to struct parameters, whose
// element type is unknown here; uint8 (raw bytes) binds anywhere.
void check_foreign_elements(const KernelInfo& k, const ParamInfo& p, const Argument& a) {
  if (a.host_raw_bytes || a.host_foreign_type.empty()) return;
  if (p.scalar == ScalarType::unknown) {
    // A struct parameter: structured (or complex…) elements must be the struct's size.
    if (p.kind != ParamKind::buffer || !p.element_size || !a.host_itemsize || a.host_itemsize == p.element_size) return;
    throw ArgumentError(describe(k, p) + ": the array's " + a.host_foreign_type + " elements are " +
                        std::to_string(a.host_itemsize) + " bytes but " + p.type_name + " is " +
                        std::to_string(p.element_size) + " bytes; match the struct's layout (or pass .view(np.uint8))");
  }
  throw ArgumentError(describe(k, p) + ": the array holds " + a.host_foreign_type + " elements, which no MSL type "
                      "matches, but the kernel reads " + to_string(p.scalar) + conversion_advice(p.scalar));
}

// Data in the other byte order (a big-endian NumPy array, 0-d array or Buffer, or a structured
// dtype with big-endian fields) would be misread: refused the same way for pointers, `constant
// T&` and by-value parameters (what NumPy itself converts, a np.float32 scalar, is native).
void check_byte_order(const KernelInfo& k, const ParamInfo& p, const Argument& a) {
  if (!a.host_big_endian) return;
  throw ArgumentError(describe(k, p) + ": the data is in big-endian (non-native) byte order, which the kernel would "
                      "misread; convert it with x.astype(x.dtype.newbyteorder('='))");
}

// Not owning: an alias of no shared_ptr, so no reference count changes hands.
template <class T>
std::shared_ptr<T> borrowed(const std::shared_ptr<T>& p) {
  return std::shared_ptr<T>(std::shared_ptr<T>(), p.get());
}

std::string device_name(const DeviceInfo& d) { return d.backend + ":" + std::to_string(d.index); }

// A Buffer belongs to the device that made it: its memory may mean nothing to
// another one (a host pointer on a GPU, another GPU's memory). Moving is explicit: buf.to(dev).
void check_home(const KernelInfo& k, const ParamInfo& p, const BufferStorage& storage, const DeviceInfo& dev) {
  const DeviceInfo* home = storage.home();
  if (!home || home == &dev || (home->backend == dev.backend && home->index == dev.index)) return;
  throw ArgumentError(describe(k, p) + ": the Buffer lives on " + device_name(*home) + " but the kernel runs on " +
                      device_name(dev) + "; copy it there first with buf.to(device)");
}

// Host memory inside a Buffer of the kernel's device binds as that Buffer at an offset (core/buffer_directory.hpp).
// The command owns the Buffer (the view may be let go while queued work still uses it).
bool bind_view_of_buffer(const Argument& a, BufferDirectory& buffers, BoundArgument& out) {
  if (a.kind != Argument::Kind::host || a.host_nbytes == 0) return false;
  std::size_t offset = 0;
  std::shared_ptr<BufferStorage> whole = buffers.find(a.host_data, a.host_nbytes, &offset);
  if (!whole) return false;
  out.buffer = std::move(whole);
  out.offset = offset;
  out.view_nbytes = a.host_nbytes;
  return true;
}

void bind_buffer(const KernelInfo& k, const ParamInfo& p, const Argument& a, bool check_size, bool borrow,
                 const DeviceInfo& dev, BufferDirectory& buffers, BoundArgument& out) {
  void* address = nullptr;
  std::size_t nbytes = 0;
  if (a.kind == Argument::Kind::buffer) {
    if (!a.buffer) throw ArgumentError(describe(k, p) + ": the buffer is empty (default-constructed)");
    check_home(k, p, *a.buffer.storage(), dev);
    if (!p.is_const && a.buffer.read_only()) {
      throw ArgumentError(describe(k, p) + ": the kernel may write this argument but its memory is read-only (an "
                          "immutable JAX array, or read-only DLPack / CUDA array interface memory); declare the "
                          "parameter const, or pass a writable copy");
    }
    out.buffer = borrow ? borrowed(a.buffer.storage()) : a.buffer.storage();
    address = a.buffer.data();
    nbytes = a.buffer.nbytes();
  } else if (a.kind == Argument::Kind::host) {
    address = a.host_data;
    nbytes = a.host_nbytes;
    if (!p.is_const && !a.host_writable) {
      throw ArgumentError(describe(k, p) + ": the kernel may write this argument but the object passed is "
                          "read-only; pass a writable array or bytearray, or declare the parameter const");
    }
  }
  if (a.kind == Argument::Kind::buffer || a.kind == Argument::Kind::host) {
    check_byte_order(k, p, a);
    check_foreign_elements(k, p, a);
    const ScalarType expected = element_scalar(p, a);
    if (!a.host_raw_bytes && a.host_scalar != ScalarType::unknown && expected != ScalarType::unknown &&
        a.host_scalar != expected) {
      throw ArgumentError(describe(k, p) + ": the array holds " + to_string(a.host_scalar) + " elements but the "
                          "kernel reads " + to_string(expected) + conversion_advice(expected));
    }
  }
  if (a.kind == Argument::Kind::host) {
    if (!bind_view_of_buffer(a, buffers, out)) {
      out.host_data = a.host_data;
      out.host_nbytes = a.host_nbytes;
    }
  } else if (a.kind != Argument::Kind::buffer) {
    throw ArgumentError(describe(k, p) + " is a pointer: pass a metalcall Buffer or an object with the buffer "
                        "protocol (NumPy array, array.array, bytearray, memoryview), not a scalar" +
                        std::string(a.kind == Argument::Kind::components ? " or a tuple (np.array(values, dtype=...))" : ""));
  }
  out.written = !p.is_const;
  if (check_size && p.element_size && nbytes < p.element_size) {
    throw ArgumentError(describe(k, p) + ": needs at least one element of " + std::to_string(p.element_size) +
                        " bytes but the buffer has " + std::to_string(nbytes) + " bytes");
  }
  if (p.element_align > 1 && nbytes && reinterpret_cast<std::uintptr_t>(address) % p.element_align != 0) {
    // NumPy aligns new arrays to 16 bytes: a copy suits only types that need no more.
    throw ArgumentError(describe(k, p) + ": the data is not aligned to " + std::to_string(p.element_align) +
                        " bytes, as " + p.type_name + " requires; pass an aligned copy (" +
                        (p.element_align <= 16 ? "x.copy(): NumPy aligns new arrays" : "a metalcall Buffer, dev.empty(...)") +
                        ")");
  }
}

// A pointer the kernel indexes as p[thread_position_in_grid] on every thread (reflection's
// grid_indexed) must hold grid.x elements: the simplest kernels are checked in full.
void check_grid_extent(const KernelInfo& k, const ParamInfo& p, const Argument& a, const LaunchShape& shape) {
  const std::size_t nbytes = a.kind == Argument::Kind::buffer ? a.buffer.nbytes() : a.host_nbytes;
  if (!p.element_size || nbytes / p.element_size >= shape.grid[0]) return;
  throw ArgumentError(describe(k, p) + ": every thread reads or writes " + p.name + "[thread_position_in_grid], so the "
                      "grid of " + std::to_string(shape.grid[0]) + " threads (in x) needs " + std::to_string(shape.grid[0]) +
                      " elements of " + std::to_string(p.element_size) + " bytes, but the array holds " +
                      std::to_string(nbytes / p.element_size) + " (" + std::to_string(nbytes) + " bytes): pass a "
                      "longer array or a smaller grid");
}

void bind_value(const KernelInfo& k, const ParamInfo& p, const Argument& a, bool borrow, const DeviceInfo& dev,
                BufferDirectory& buffers, BoundArgument& out) {
  // A writable `device T&` is memory the kernel writes: bind it in place, like a pointer.
  const bool writable_reference = p.kind == ParamKind::reference && !p.is_const;
  if (writable_reference && a.kind != Argument::Kind::buffer && a.kind != Argument::Kind::host) {
    throw ArgumentError(describe(k, p) + " is written by the kernel: pass a metalcall Buffer or a writable array, "
                        "not a value");
  }
  switch (a.kind) {
    case Argument::Kind::buffer:
      // Metal lets a buffer back a constant T&; bind it in place.
      bind_buffer(k, p, a, true, borrow, dev, buffers, out);
      out.written = writable_reference;
      return;
    case Argument::Kind::host:
      if (writable_reference) {
        bind_buffer(k, p, a, true, borrow, dev, buffers, out);
        return;
      }
      [[fallthrough]];
    case Argument::Kind::bytes: {
      const auto* data = a.kind == Argument::Kind::host ? static_cast<const std::uint8_t*>(a.host_data) : a.data.data();
      const std::size_t n = a.kind == Argument::Kind::host ? a.host_nbytes : a.data.size();
      if (p.element_size && n != p.element_size) {
        throw ArgumentError(describe(k, p) + ": takes exactly " + std::to_string(p.element_size) + " bytes, got " +
                            std::to_string(n) + " bytes");
      }
      if (a.kind == Argument::Kind::host) {
        check_byte_order(k, p, a);
        check_foreign_elements(k, p, a);
      }
      const ScalarType expected = a.kind == Argument::Kind::host ? element_scalar(p, a) : p.scalar;
      if (a.kind == Argument::Kind::host && !a.host_raw_bytes && a.host_scalar != ScalarType::unknown &&
          expected != ScalarType::unknown && a.host_scalar != expected) {
        throw ArgumentError(describe(k, p) + ": the value holds " + std::string(to_string(a.host_scalar)) +
                            " but the kernel declares " + to_string(expected));
      }
      // A `constant T&` inside a Buffer reads it in place, as the Buffer itself would be: in a batch
      // after a call that writes it, not as it was when this call was made.
      const bool aligned = p.element_align <= 1 || reinterpret_cast<std::uintptr_t>(data) % p.element_align == 0;
      if (p.kind == ParamKind::reference && aligned && bind_view_of_buffer(a, buffers, out)) return;
      out.bytes.assign(data, data + n);
      return;
    }
    default:
      try {
        out.bytes = pack_scalar(a, p);
      } catch (const ArgumentError& e) {
        throw ArgumentError("kernel '" + k.name + "' " + e.what());  // which kernel, too
      }
      return;
  }
}

// A parameter its [[function_constant]] leaves out of this specialisation takes None (or
// nothing, at the end of the call) and binds nothing: Metal skips it, translated kernels get
// a null pointer or zeros of its size (the entry point copies by-value parameters). A value
// for it would be silently unused, so it is an error; so is None for a parameter that exists.
void bind_absent(const KernelInfo& k, const ParamInfo& p, const Argument* a, BoundArgument& out) {
  if (p.enabled) {
    throw ArgumentError(describe(k, p) + ": None was given, but the kernel needs this argument" +
                        (p.function_constant.empty()
                             ? std::string()
                             : " (its function constant '" + p.function_constant + "' is true)") +
                        "; pass a metalcall Buffer, an array or a value");
  }
  if (a && a->kind != Argument::Kind::none) {
    throw ArgumentError(describe(k, p) + " does not exist in this specialisation: its function constant '" +
                        p.function_constant + "' is false (or not given), so the kernel would ignore the value; pass "
                        "None, or set constants={'" + p.function_constant + "': True} to use it");
  }
  out.absent = true;
  if (p.kind != ParamKind::buffer) out.bytes.assign(p.element_size, 0);
}

}  // namespace

void bind_arguments(const KernelImpl& kernel, const LaunchShape& shape, const std::vector<Argument>& args,
                    bool borrow, DispatchCommand& command, bool* empty_grid) {
  const KernelInfo& k = kernel.info();
  const auto& buffer_params = kernel.buffer_params();
  // Parameters a false [[function_constant]] leaves out may also be left off the end of the call.
  std::size_t needed = buffer_params.size();
  while (needed > 0 && !buffer_params[needed - 1]->enabled) --needed;
  if (args.size() > buffer_params.size() || args.size() < needed) {
    std::string expected;
    for (const ParamInfo* p : buffer_params)
      expected += (expected.empty() ? "" : ", ") + param_signature(*p) +
                  (p->enabled ? "" : " = None, as '" + p->function_constant + "' is false");
    throw ArgumentError("kernel '" + k.name + "' takes " + std::to_string(buffer_params.size()) +
                        " argument(s) after the grid (" + (expected.empty() ? "none" : expected) + ") but " +
                        std::to_string(args.size()) + " were given");
  }
  check_grid(k, shape, empty_grid);
  const DeviceInfo& dev = kernel.device()->info();
  BufferDirectory& buffers = kernel.device()->backend().buffer_directory();

  command.program = borrow ? borrowed(kernel.program()) : kernel.program();
  for (int d = 0; d < 3; ++d) command.grid[d] = static_cast<std::uint32_t>(shape.grid[d]);
  choose_threadgroup(k, kernel.program()->automatic_threadgroup_limit(), kernel.device()->info(), shape,
                     command.threadgroup);
  check_ushort_builtins(k, shape, command.threadgroup);
  // A thread's scratch command keeps its arguments, reset, from the last call: a kernel of as
  // many parameters reuses them rather than constructing new ones.
  if (command.args.size() == k.params.size()) {
    for (BoundArgument& a : command.args) a.reset();
  } else {
    command.args.clear();
    command.args.resize(k.params.size());
  }

  for (std::size_t i = 0; i < buffer_params.size(); ++i) {
    const ParamInfo& p = *buffer_params[i];
    BoundArgument& out = command.args[p.position];
    out.kind = p.kind;
    if (i >= args.size() || !p.enabled || args[i].kind == Argument::Kind::none) {
      bind_absent(k, p, i < args.size() ? &args[i] : nullptr, out);
      continue;
    }
    if (p.kind == ParamKind::buffer) {
      bind_buffer(k, p, args[i], !*empty_grid, borrow, dev, buffers, out);
      // Checked mode reports each access instead; here memory past the end would be overwritten.
      if (!*empty_grid && p.grid_indexed && !kernel.device()->options().checked) check_grid_extent(k, p, args[i], shape);
    }
    else bind_value(k, p, args[i], borrow, dev, buffers, out);
  }

  std::size_t threadgroup_total = 0;
  const auto& tg_params = kernel.threadgroup_params();
  for (const ParamInfo* p : tg_params) {
    BoundArgument& out = command.args[p->position];
    out.kind = ParamKind::threadgroup_memory;
    if (p->binding < 0 || static_cast<std::size_t>(p->binding) >= shape.threadgroup_memory.size() ||
        shape.threadgroup_memory[p->binding] == 0) {
      throw ArgumentError("kernel '" + k.name + "' parameter '" + p->name + "' is threadgroup memory [[threadgroup(" +
                          std::to_string(p->binding) + ")]]: give its byte length with threadgroup_memory=[...]");
    }
    const std::size_t n = shape.threadgroup_memory[p->binding];
    if (n % 16 != 0) {
      throw ArgumentError("kernel '" + k.name + "': threadgroup_memory[" + std::to_string(p->binding) + "] is " +
                          std::to_string(n) + " bytes; it must be a multiple of 16 bytes (Metal's rule)");
    }
    if (p->element_size && n < p->element_size) {
      throw ArgumentError("kernel '" + k.name + "': threadgroup_memory[" + std::to_string(p->binding) + "] is " +
                          std::to_string(n) + " bytes, smaller than one " + p->type_name);
    }
    out.threadgroup_length = n;
    threadgroup_total += n;
  }
  if (shape.threadgroup_memory.size() > 0 && tg_params.empty()) {
    bool any = false;
    for (auto n : shape.threadgroup_memory) any = any || n;
    if (any) throw ArgumentError("kernel '" + k.name + "' has no [[threadgroup(i)]] parameters, but threadgroup_memory was given");
  }
  const auto limit = kernel.device()->info().threadgroup_memory_length;
  if (limit && threadgroup_total > limit) {
    throw ArgumentError("kernel '" + k.name + "': " + std::to_string(threadgroup_total) + " bytes of threadgroup "
                        "memory requested; " + kernel.device()->info().name + " allows " + std::to_string(limit));
  }
  if (kernel.has_resource_params() || !shape.textures.empty() || !shape.samplers.empty())
    bind_textures(k, shape, borrow, dev, command);
  for (std::size_t i = 0; i < k.params.size(); ++i) {
    if (k.params[i].kind == ParamKind::builtin) command.args[i].kind = ParamKind::builtin;
  }
}

const KernelInfo& Kernel::info() const { return impl_->info(); }

Device Kernel::device() const { return Device(impl_->device()); }

Completion Kernel::operator()(const LaunchShape& shape, const std::vector<Argument>& args) const {
  return impl_->call(shape, args);
}

}  // namespace metalcall
