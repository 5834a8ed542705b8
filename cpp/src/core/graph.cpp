// Graph: calls recorded once and replayed as one submission each time, with hazard
// tracking, never going back to Python or re-checking arguments. A backend may turn
// the calls into a replayable object once (CUDA: a CUDA graph); otherwise each replay
// submits the recorded commands again through the device's queue.
#include <algorithm>

#include "core/impl.hpp"
#include "metalcall/errors.hpp"

namespace metalcall {

GraphImpl::GraphImpl(std::shared_ptr<DeviceImpl> device, std::vector<DispatchCommand> commands,
                     std::vector<std::shared_ptr<void>> keep_alive, bool uses_host_memory)
    : device_(std::move(device)), commands_(std::move(commands)), keep_alive_(std::move(keep_alive)),
      uses_host_memory_(uses_host_memory) {
  std::lock_guard<std::mutex> lock(mutex_);
  prepare();
}

void GraphImpl::prepare() {
  buffers_.clear();
  uses_host_memory_ = false;
  for (const auto& command : commands_) {
    uses_host_memory_ = uses_host_memory_ || command.uses_host_memory();
    for (const auto& arg : command.args) {
      if (arg.buffer && std::find(buffers_.begin(), buffers_.end(), arg.buffer) == buffers_.end())
        buffers_.push_back(arg.buffer);
      for (const auto& more : arg.more_buffers)  // an array of textures
        if (std::find(buffers_.begin(), buffers_.end(), more) == buffers_.end()) buffers_.push_back(more);
    }
  }
  // Host memory is staged per call, and checked mode checks each call: those replay by resubmitting.
  backend_graph_.reset();
  if (!commands_.empty() && !uses_host_memory_ && !device_->options().checked)
    backend_graph_ = device_->backend().make_graph(commands_);
}

void GraphImpl::update(std::size_t index, const std::vector<Argument>& args, std::shared_ptr<void> owner) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (index >= commands_.size()) {
    throw ArgumentError("this graph has " + std::to_string(commands_.size()) + " recorded call(s); there is no call " +
                        std::to_string(index));
  }
  const DispatchCommand& old = commands_[index];
  const KernelImpl kernel(device_, old.program);
  // The same grid, threadgroup and threadgroup memory as recorded: only the arguments change.
  LaunchShape shape;
  for (int d = 0; d < 3; ++d) {
    shape.grid[d] = old.grid[d];
    shape.threadgroup[d] = old.threadgroup[d];
  }
  for (const ParamInfo* p : kernel.threadgroup_params()) {
    if (p->binding < 0) continue;
    const auto at = static_cast<std::size_t>(p->binding);
    if (shape.threadgroup_memory.size() <= at) shape.threadgroup_memory.resize(at + 1, 0);
    shape.threadgroup_memory[at] = old.args[p->position].threadgroup_length;
  }
  // Textures and samplers stay as recorded: g.update(i, *args) re-binds the positional arguments.
  for (const ParamInfo* p : kernel.info().texture_params()) {
    const auto at = static_cast<std::size_t>(p->binding);
    const BoundArgument& recorded = old.args[p->position];
    if (shape.textures.size() <= at + recorded.more_textures.size()) shape.textures.resize(at + 1 + recorded.more_textures.size());
    shape.textures[at] = recorded.texture;
    for (std::size_t i = 0; i < recorded.more_textures.size(); ++i) shape.textures[at + 1 + i] = recorded.more_textures[i];
  }
  for (const ParamInfo* p : kernel.info().sampler_params()) {
    const auto at = static_cast<std::size_t>(p->binding);
    if (shape.samplers.size() <= at) shape.samplers.resize(at + 1);
    shape.samplers[at] = old.args[p->position].sampler;
  }
  DispatchCommand fresh;
  bool empty = false;
  bind_arguments(kernel, shape, args, /*borrow=*/false, fresh, &empty);
  commands_[index] = std::move(fresh);
  // Earlier owners stay too: a replay in flight may still use what they own.
  if (owner) keep_alive_.push_back(std::move(owner));
  prepare();
}

Completion GraphImpl::replay() {
  auto completion = std::make_shared<CompletionState>();
  std::unique_lock<std::mutex> lock(mutex_);
  if (commands_.empty()) {
    completion->finish(nullptr, 0.0);
    return Completion(completion);
  }
  if (backend_graph_) {
    const std::shared_ptr<BackendGraph> graph = backend_graph_;
    const std::vector<std::shared_ptr<BufferStorage>> buffers(buffers_.begin(), buffers_.end());
    lock.unlock();
    BackendDevice& backend = device_->backend();
    submit_in_queue_order(backend, buffers, completion, [&] { backend.replay(graph, completion); });
    return Completion(completion);
  }
  // Host memory is borrowed for the replay only, and checked mode reports faults at once.
  const bool caller_waits = uses_host_memory_ || device_->options().checked;
  std::vector<DispatchCommand> commands(commands_);
  lock.unlock();
  device_->submit(std::move(commands), completion, caller_waits);
  if (caller_waits) completion->wait_for_borrowed_memory();
  return Completion(completion);
}

Completion Graph::replay() const {
  if (!impl_) throw ArgumentError("this graph is empty: record one with Device::begin_recording()");
  return impl_->replay();
}

std::size_t Graph::size() const { return impl_ ? impl_->size() : 0; }

void Graph::update(std::size_t index, const std::vector<Argument>& args, std::shared_ptr<void> owner) {
  if (!impl_) throw ArgumentError("this graph is empty: record one with Device::begin_recording()");
  impl_->update(index, args, std::move(owner));
}

}  // namespace metalcall
