// Private implementation classes behind the public Device/Library/Kernel/Batch.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/backend.hpp"
#include "metalcall/device.hpp"

namespace metalcall {

/**
 * Marks `buffers` as used by `completion` and runs `queue` (which hands the work to `backend`)
 * under the backend's submit lock, so that buffers name their uses in queue order; finishes
 * `completion` with the error when `queue` throws.
 */
void submit_in_queue_order(BackendDevice& backend, const std::vector<std::shared_ptr<BufferStorage>>& buffers,
                           const std::shared_ptr<CompletionState>& completion, const std::function<void()>& queue);

class DeviceImpl : public std::enable_shared_from_this<DeviceImpl> {
 public:
  DeviceImpl(std::shared_ptr<BackendDevice> backend, DeviceOptions options)
      : backend_(std::move(backend)), options_(options) {}

  BackendDevice& backend() const { return *backend_; }
  const DeviceInfo& info() const { return backend_->info(); }
  const DeviceOptions& options() const { return options_; }

  std::shared_ptr<LibraryImpl> compile(const std::string& source, const CompileOptions& options);
  std::shared_ptr<LibraryImpl> load_library(const std::vector<std::uint8_t>& bytes);

  /** Submits one call (or a committed batch), with hazard tracking. */
  void submit(std::vector<DispatchCommand>&& commands, const std::shared_ptr<CompletionState>& completion,
              bool caller_waits);

  // Batches are per thread: calls made on the thread that opened one are recorded.
  std::shared_ptr<BatchImpl> open_batch(bool recording = false);
  std::shared_ptr<BatchImpl> current_batch();  // nullptr when none is open on this thread
  void close_batch(BatchImpl* batch);

 private:
  std::shared_ptr<BackendDevice> backend_;
  DeviceOptions options_;

  std::mutex libraries_mutex_;
  // Content-keyed (DESIGN.md §4). Every library still referenced anywhere is found
  // again (weak); the kRecentLibraries compiled or found last are kept alive even when
  // nothing else references them, so repeated compiles stay free while an unbounded
  // stream of distinct sources unloads its old code (bounded memory and mappings).
  static constexpr std::size_t kRecentLibraries = 64;
  std::unordered_map<std::string, std::weak_ptr<LibraryImpl>> libraries_;
  std::deque<std::shared_ptr<LibraryImpl>> recent_;  // most recent first
  std::size_t sweep_at_ = 2 * kRecentLibraries;      // libraries_ size that triggers dropping dead entries
  /** Marks `library` most recent (libraries_mutex_ held); returns the one it pushed out, to destroy unlocked. */
  std::shared_ptr<LibraryImpl> remember(const std::shared_ptr<LibraryImpl>& library);

  std::atomic<int> open_batches_{0};
  std::mutex batches_mutex_;
  std::unordered_map<std::thread::id, std::shared_ptr<BatchImpl>> batches_;
};

class LibraryImpl : public std::enable_shared_from_this<LibraryImpl> {
 public:
  LibraryImpl(std::shared_ptr<DeviceImpl> device, std::shared_ptr<BackendLibrary> backend)
      : device_(std::move(device)), backend_(std::move(backend)) {}
  const std::shared_ptr<DeviceImpl>& device() const { return device_; }
  BackendLibrary& backend() const { return *backend_; }
  std::shared_ptr<KernelImpl> function(const std::string& name, const std::vector<FunctionConstant>& constants);

 private:
  std::shared_ptr<DeviceImpl> device_;
  std::shared_ptr<BackendLibrary> backend_;
  std::mutex kernels_mutex_;
  std::unordered_map<std::string, std::shared_ptr<KernelImpl>> kernels_;  // by name + constants
};

class KernelImpl {
 public:
  KernelImpl(std::shared_ptr<DeviceImpl> device, std::shared_ptr<Program> program);
  const KernelInfo& info() const { return program_->info(); }
  const std::shared_ptr<DeviceImpl>& device() const { return device_; }
  const std::shared_ptr<Program>& program() const { return program_; }
  const std::vector<const ParamInfo*>& buffer_params() const { return buffer_params_; }
  const std::vector<const ParamInfo*>& threadgroup_params() const { return threadgroup_params_; }
  /** The kernel has [[texture(i)]] or [[sampler(i)]] parameters (most have neither: no binding work). */
  bool has_resource_params() const { return has_resource_params_; }

  Completion call(const LaunchShape& shape, const std::vector<Argument>& args);

 private:
  /**
   * What the last call that bound on the fast path passed (kernel.cpp, "Repeated calls"): a
   * call whose grid and Buffers are equal in everything binding reads binds the same command,
   * so it skips binding and its checks. Only for kernels whose every argument is a pointer
   * parameter (`repeatable_`) and calls with Buffers only and an automatic threadgroup.
   */
  struct BufferKey {
    const void* data = nullptr;
    std::size_t nbytes = 0;
    const DeviceInfo* home = nullptr;
    ScalarType scalar = ScalarType::unknown;
    bool raw = false;
    std::size_t itemsize = 0;
    bool read_only = false;  // a read-only wrap of memory a writable Buffer had: checked again
    bool operator==(const BufferKey& o) const {
      return data == o.data && nbytes == o.nbytes && home == o.home && scalar == o.scalar && raw == o.raw &&
             itemsize == o.itemsize && read_only == o.read_only;
    }
  };
  bool repeat_eligible(const LaunchShape& shape, const std::vector<Argument>& args) const;
  bool matches_last(const LaunchShape& shape, const std::vector<Argument>& args);
  void remember_last(const LaunchShape& shape, const std::vector<Argument>& args, const std::uint32_t threadgroup[3]);
  void bind_repeat(const LaunchShape& shape, const std::vector<Argument>& args, DispatchCommand& command,
                   const std::uint32_t threadgroup[3]) const;

  std::shared_ptr<DeviceImpl> device_;
  std::shared_ptr<Program> program_;
  std::vector<const ParamInfo*> buffer_params_;       // sorted by [[buffer(i)]]
  std::vector<const ParamInfo*> threadgroup_params_;  // sorted by [[threadgroup(i)]]
  bool has_resource_params_ = false;
  bool repeatable_ = false;
  std::atomic_flag last_busy_ = ATOMIC_FLAG_INIT;  // guards the two below; a call that finds it set binds as usual
  std::uint64_t last_grid_[3] = {0, 0, 0};         // 0: nothing remembered
  std::vector<BufferKey> last_buffers_;
  std::uint32_t last_threadgroup_[3] = {0, 0, 0};  // the automatic threadgroup bound for last_grid_
};

class BatchImpl {
 public:
  BatchImpl(std::shared_ptr<DeviceImpl> device, bool recording)
      : device_(std::move(device)), completion_(std::make_shared<CompletionState>(false)), recording_(recording) {}
  void record(DispatchCommand&& command);
  void keep_alive(std::shared_ptr<void> owner);
  Completion commit();
  void discard();
  std::shared_ptr<GraphImpl> end_recording();
  bool recording() const { return recording_; }
  std::size_t size() const { return commands_.size(); }
  const std::shared_ptr<CompletionState>& completion() const { return completion_; }
  bool open() const { return open_; }

 private:
  std::shared_ptr<DeviceImpl> device_;
  std::vector<DispatchCommand> commands_;
  std::shared_ptr<CompletionState> completion_;
  // Owners of memory the commands borrow; released with the batch (commit waits for them).
  std::vector<std::shared_ptr<void>> keep_alive_;
  bool uses_host_memory_ = false;
  bool open_ = true;
  bool recording_ = false;  // begin_recording(): ends as a Graph, never submitted
};

class GraphImpl {
 public:
  GraphImpl(std::shared_ptr<DeviceImpl> device, std::vector<DispatchCommand> commands,
            std::vector<std::shared_ptr<void>> keep_alive, bool uses_host_memory);
  Completion replay();
  void update(std::size_t index, const std::vector<Argument>& args, std::shared_ptr<void> owner);
  std::size_t size() const { return commands_.size(); }

 private:
  /** buffers_, uses_host_memory_ and the backend's graph, from commands_ (mutex_ held). */
  void prepare();

  std::shared_ptr<DeviceImpl> device_;
  std::mutex mutex_;                              // replay() against update()
  std::vector<DispatchCommand> commands_;         // hold their programs and buffers
  std::vector<std::shared_ptr<void>> keep_alive_;
  bool uses_host_memory_;
  std::vector<std::shared_ptr<BufferStorage>> buffers_;  // each once: hazard tracking per replay
  std::shared_ptr<BackendGraph> backend_graph_;          // holds what it runs itself
};

/**
 * Validates a call against the kernel's reflection and packs its arguments into
 * `command` (its earlier arguments are dropped). With `borrow`, the command points at
 * the program and the buffers without owning them: only for a call that runs before
 * `args` and the kernel can go.
 */
void bind_arguments(const KernelImpl& kernel, const LaunchShape& shape, const std::vector<Argument>& args,
                    bool borrow, DispatchCommand& command, bool* empty_grid);

}  // namespace metalcall
