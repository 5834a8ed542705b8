// Device, Library and Batch: caches, batching and submission with hazard tracking.
#include <algorithm>
#include <cctype>

#include "core/interrupt.hpp"
#include "core/compile_limits.hpp"
#include "core/hash.hpp"
#include "core/impl.hpp"
#include "metalcall/errors.hpp"

namespace metalcall {

namespace {
std::string library_key(BackendDevice& backend, const std::string& source, const CompileOptions& options) {
  ContentHash h;
  h.add(backend.info().backend).add(backend.info().architecture).add(backend.compiler_identity());
  h.add(source).add(options.fast_math ? "fast" : "precise").add(options.language_version);
  for (const auto& [name, value] : options.defines) h.add(name).add(value);
  return h.hex();
}
// A macro is a name and one line of text: a control character (\r is a line end to clang,
// \n to every preprocessor) could end the definition and start a directive of its own.
std::string printable(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c >= 0x20 && c != 0x7f) {
      out += static_cast<char>(c);
    } else {
      static const char* hex = "0123456789abcdef";
      out += std::string("\\x") + hex[c >> 4] + hex[c & 15];
    }
  }
  return out;
}
void check_define(const std::string& name, const std::string& value) {
  bool ok = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]));
  for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!ok) throw ArgumentError("defines: '" + printable(name) + "' is not a valid macro name (letters, digits and _)");
  for (unsigned char c : value) {
    if (c < 0x20 || c == 0x7f) {
      throw ArgumentError("defines: the value of '" + name + "' holds a control character (" + printable(std::string(1, char(c))) +
                          "): a macro's value is one line of printable text");
    }
  }
}
}  // namespace

// ---- DeviceImpl ----

std::shared_ptr<LibraryImpl> DeviceImpl::compile(const std::string& source, const CompileOptions& options) {
  for (const auto& [name, value] : options.defines) check_define(name, value);
  const std::string key = library_key(*backend_, source, options);
  {
    std::shared_ptr<LibraryImpl> dropped;  // destroyed after the lock is released
    std::lock_guard<std::mutex> lock(libraries_mutex_);
    auto it = libraries_.find(key);
    if (it != libraries_.end()) {
      if (auto library = it->second.lock()) {
        dropped = remember(library);
        return library;
      }
    }
  }
  // Compile outside the lock: compiles of different sources run in parallel. Two
  // threads compiling the same source both succeed; the first one stored wins.
  check_source_size(source);  // no backend reads an oversized source (core/compile_limits.hpp)
  auto compiled = backend_->compile(source, options);
  auto library = std::make_shared<LibraryImpl>(shared_from_this(), compiled);
  std::shared_ptr<LibraryImpl> dropped;  // destroyed (its code unloaded) after the lock is released
  std::lock_guard<std::mutex> lock(libraries_mutex_);
  auto& slot = libraries_[key];
  if (auto existing = slot.lock()) library = existing;
  else slot = library;
  dropped = remember(library);
  return library;
}

std::shared_ptr<LibraryImpl> DeviceImpl::remember(const std::shared_ptr<LibraryImpl>& library) {
  std::shared_ptr<LibraryImpl> dropped;
  if (!recent_.empty() && recent_.front() == library) return dropped;  // the common repeat: nothing to move
  auto it = std::find(recent_.begin(), recent_.end(), library);
  if (it != recent_.end()) recent_.erase(it);
  recent_.push_front(library);
  // Dropped from here, a library lives on only while the user (a Library, a Kernel,
  // a recorded Graph, a call in flight) still holds it or its programs.
  if (recent_.size() > kRecentLibraries) {
    dropped = std::move(recent_.back());
    recent_.pop_back();
  }
  if (libraries_.size() >= sweep_at_) {
    for (auto entry = libraries_.begin(); entry != libraries_.end();) {
      if (entry->second.expired()) entry = libraries_.erase(entry);
      else ++entry;
    }
    sweep_at_ = std::max<std::size_t>(2 * kRecentLibraries, 2 * libraries_.size());
  }
  return dropped;
}

std::shared_ptr<LibraryImpl> DeviceImpl::load_library(const std::vector<std::uint8_t>& bytes) {
  return std::make_shared<LibraryImpl>(shared_from_this(), backend_->load_library(bytes));
}

namespace {
// The submit lock this thread holds between marking a submission's buffers and the
// backend queueing it (null when none): submission_queued() releases it early.
thread_local std::unique_lock<std::mutex>* t_submit_lock = nullptr;
}  // namespace

void submission_queued() {
  if (t_submit_lock && t_submit_lock->owns_lock()) t_submit_lock->unlock();
}

void submit_in_queue_order(BackendDevice& backend, const std::vector<std::shared_ptr<BufferStorage>>& buffers,
                           const std::shared_ptr<CompletionState>& completion, const std::function<void()>& queue) {
  // Marks and queueing under one lock: two threads that marked in one order and queued in the
  // other would leave a buffer naming the earlier of two writers, and a wait on it would return
  // while the later one still writes.
  std::unique_lock<std::mutex> lock(backend.submit_mutex(), std::defer_lock);
  lock_patiently(lock);  // its holder may wait for the GPU
  for (const auto& buffer : buffers) buffer->set_last_use(completion);
  t_submit_lock = &lock;
  try {
    queue();
  } catch (...) {
    t_submit_lock = nullptr;
    if (lock.owns_lock()) lock.unlock();
    // The buffers already name this completion: it must finish, or waits on them hang.
    if (!completion->done()) completion->finish(std::current_exception(), 0.0);
    throw;
  }
  t_submit_lock = nullptr;
}

void DeviceImpl::submit(std::vector<DispatchCommand>&& commands, const std::shared_ptr<CompletionState>& completion,
                        bool caller_waits) {
  std::vector<std::shared_ptr<BufferStorage>> buffers;
  for (const auto& command : commands)
    for (const auto& arg : command.args) {
      if (arg.buffer) buffers.push_back(arg.buffer);
      for (const auto& more : arg.more_buffers) buffers.push_back(more);  // an array of textures
    }
  submit_in_queue_order(*backend_, buffers, completion,
                        [&] { backend_->submit(std::move(commands), completion, caller_waits); });
}

std::shared_ptr<BatchImpl> DeviceImpl::open_batch(bool recording) {
  std::lock_guard<std::mutex> lock(batches_mutex_);
  auto& slot = batches_[std::this_thread::get_id()];
  if (slot) {
    throw ArgumentError(std::string("a ") + (slot->recording() ? "recording" : "batch") +
                        " is already open on this thread for this device; batches and recordings do not nest");
  }
  slot = std::make_shared<BatchImpl>(shared_from_this(), recording);
  open_batches_.fetch_add(1, std::memory_order_relaxed);
  return slot;
}

std::shared_ptr<BatchImpl> DeviceImpl::current_batch() {
  if (open_batches_.load(std::memory_order_relaxed) == 0) return nullptr;  // the common case: no lock
  std::lock_guard<std::mutex> lock(batches_mutex_);
  auto it = batches_.find(std::this_thread::get_id());
  return it == batches_.end() ? nullptr : it->second;
}

void DeviceImpl::close_batch(BatchImpl* batch) {
  std::lock_guard<std::mutex> lock(batches_mutex_);
  for (auto it = batches_.begin(); it != batches_.end(); ++it) {
    if (it->second.get() == batch) {
      batches_.erase(it);
      open_batches_.fetch_sub(1, std::memory_order_relaxed);
      return;
    }
  }
}

// ---- BatchImpl ----

void BatchImpl::record(DispatchCommand&& command) {
  uses_host_memory_ = uses_host_memory_ || command.uses_host_memory();
  commands_.push_back(std::move(command));
}

void BatchImpl::keep_alive(std::shared_ptr<void> owner) {
  if (!open_) throw ArgumentError("this batch was already committed or discarded; keep-alives go to an open batch");
  keep_alive_.push_back(std::move(owner));
}

Completion BatchImpl::commit() {
  if (recording_) throw ArgumentError("this is a recording: end it with end_recording(), then replay() the graph");
  if (!open_) throw ArgumentError("this batch was already committed or discarded");
  open_ = false;
  // A keep-alive stands for memory its caller may let go of once commit() returns:
  // like host memory, it is borrowed only until then.
  const bool caller_waits = uses_host_memory_ || !keep_alive_.empty();
  device_->close_batch(this);
  completion_->mark_submitted();
  if (commands_.empty()) {
    completion_->finish(nullptr, 0.0);
    return Completion(completion_);
  }
  device_->submit(std::move(commands_), completion_, caller_waits);
  commands_.clear();
  // Foreign memory is borrowed only for the duration of the commit.
  if (caller_waits) completion_->wait_for_borrowed_memory();
  return Completion(completion_);
}

std::shared_ptr<GraphImpl> BatchImpl::end_recording() {
  if (!recording_) throw ArgumentError("this batch is not a recording: commit() it (Device::begin_recording() records)");
  if (!open_) throw ArgumentError("this recording was already ended or discarded");
  open_ = false;
  device_->close_batch(this);
  // The recorded calls ran nothing: their Completions are done now.
  completion_->mark_submitted();
  completion_->finish(nullptr, 0.0);
  auto graph = std::make_shared<GraphImpl>(device_, std::move(commands_), std::move(keep_alive_), uses_host_memory_);
  commands_.clear();
  keep_alive_.clear();
  return graph;
}

void BatchImpl::discard() {
  if (!open_) return;
  open_ = false;
  device_->close_batch(this);
  commands_.clear();
  keep_alive_.clear();
  completion_->mark_submitted();
  completion_->finish(nullptr, 0.0);
}

// ---- public wrappers ----

const DeviceInfo& Device::info() const { return impl_->info(); }
const DeviceOptions& Device::options() const { return impl_->options(); }

Library Device::compile(const std::string& source, const CompileOptions& options) const {
  return Library(impl_->compile(source, options));
}

Library Device::load_library(const std::vector<std::uint8_t>& bytes) const {
  return Library(impl_->load_library(bytes));
}

Buffer Device::allocate(std::size_t nbytes, bool zeroed) const {
  const auto limit = impl_->info().max_buffer_length;
  if (limit && nbytes > limit) {
    throw ArgumentError("cannot allocate " + std::to_string(nbytes) + " bytes: the largest buffer on " +
                        impl_->info().name + " is " + std::to_string(limit) + " bytes");
  }
  BackendDevice& backend = impl_->backend();
  auto storage = zeroed ? backend.allocate(nbytes) : backend.allocate_uninitialized(nbytes);
  storage->set_home(&impl_->info());
  storage->count_in(&backend.bytes_in_use());
  storage->list_in(&backend.buffer_directory(), storage);
  return Buffer(std::move(storage));
}

MemoryInfo Device::memory_info() const {
  BackendDevice& backend = impl_->backend();
  MemoryInfo out;
  out.in_use = backend.bytes_in_use().load(std::memory_order_relaxed);
  out.cached = backend.cached_bytes();
  std::size_t free_bytes = 0, total_bytes = 0;
  backend.device_memory(&free_bytes, &total_bytes);
  out.device_free = free_bytes;
  out.device_total = total_bytes;
  return out;
}

void Device::empty_cache() const { impl_->backend().empty_cache(); }

namespace {
// Memory a Buffer uses in place but does not own: the owner frees it when let go.
class ForeignStorage final : public BufferStorage {
 public:
  ForeignStorage(void* data, std::size_t nbytes, std::shared_ptr<void> owner)
      : BufferStorage(data, nbytes), owner_(std::move(owner)) {}

 private:
  std::shared_ptr<void> owner_;
};
}  // namespace

Buffer Device::wrap(void* data, std::size_t nbytes, std::shared_ptr<void> owner, bool read_only) const {
  if (!data && nbytes) throw ArgumentError("[metalcall] cannot wrap a null pointer of " + std::to_string(nbytes) + " bytes");
  std::shared_ptr<BufferStorage> storage;
  // The CPU runs kernels on plain host memory; other backends decide for themselves.
  if (impl_->info().backend == "cpu") storage = std::make_shared<ForeignStorage>(data, nbytes, std::move(owner));
  else storage = impl_->backend().wrap(data, nbytes, std::move(owner));
  if (!storage) {
    throw ArgumentError("[metalcall] cannot use foreign memory in place on " + impl_->info().backend +
                        "; copy it into a Buffer (dev.asarray(np.asarray(x)))");
  }
  storage->set_home(&impl_->info());
  if (read_only) storage->set_read_only();
  return Buffer(std::move(storage));
}

Buffer Device::copy(const Buffer& source) const {
  if (!source) throw ArgumentError("[metalcall] cannot copy an empty (default-constructed) Buffer");
  Buffer out = allocate(source.nbytes());
  source.wait_idle();
  // New allocations are host-visible or device memory the source's backend can address.
  source.storage()->copy_to(out.data(), source.nbytes());
  return out;
}

std::uintptr_t Device::stream_handle() const { return impl_->backend().stream_handle(); }

void Device::wait_for_stream(std::uintptr_t stream) const { impl_->backend().wait_for_stream(stream); }

void Device::synchronize() const { impl_->backend().synchronize(); }

Batch Device::begin_batch() const { return Batch(impl_->open_batch()); }
Batch Device::begin_recording() const { return Batch(impl_->open_batch(true)); }

Batch Device::current_batch() const { return Batch(impl_->current_batch()); }

std::vector<std::string> Library::function_names() const { return impl_->backend().function_names(); }

bool Library::has_function(const std::string& name) const {
  const auto names = function_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

Kernel Library::function(const std::string& name, const std::vector<FunctionConstant>& constants) const {
  return Kernel(impl_->function(name, constants));
}

Completion Batch::commit() { return impl_->commit(); }
void Batch::discard() { impl_->discard(); }
std::size_t Batch::size() const { return impl_->size(); }
void Batch::keep_alive(std::shared_ptr<void> owner) { impl_->keep_alive(std::move(owner)); }
Graph Batch::end_recording() { return Graph(impl_->end_recording()); }
bool Batch::recording() const { return impl_->recording(); }

bool DispatchCommand::uses_host_memory() const {
  for (const auto& a : args)
    if (a.host_data || a.view_nbytes) return true;
  return false;
}

std::shared_ptr<BackendLibrary> BackendDevice::load_library(const std::vector<std::uint8_t>&) {
  throw DeviceError("[" + info().backend + "] loading a compiled library (.metallib) needs the Metal backend; "
                    "compile the MSL source with Device.compile() instead");
}

}  // namespace metalcall
