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
  for (const auto& command : commands_)
    for (const auto& arg : command.args)
      if (arg.buffer && std::find(buffers_.begin(), buffers_.end(), arg.buffer) == buffers_.end())
        buffers_.push_back(arg.buffer);
  // Host memory is staged per call, and checked mode checks each call: those replay by resubmitting.
  if (!commands_.empty() && !uses_host_memory_ && !device_->options().checked)
    backend_graph_ = device_->backend().make_graph(commands_);
}

Completion GraphImpl::replay() {
  auto completion = std::make_shared<CompletionState>();
  if (commands_.empty()) {
    completion->finish(nullptr, 0.0);
    return Completion(completion);
  }
  if (backend_graph_) {
    for (const auto& buffer : buffers_) buffer->set_last_use(completion);
    try {
      device_->backend().replay(backend_graph_, completion);
    } catch (...) {
      // The buffers already name this completion: it must finish, or waits on them hang.
      if (!completion->done()) completion->finish(std::current_exception(), 0.0);
      throw;
    }
    return Completion(completion);
  }
  // Host memory is borrowed for the replay only, and checked mode reports faults at once.
  const bool caller_waits = uses_host_memory_ || device_->options().checked;
  device_->submit(std::vector<DispatchCommand>(commands_), completion, caller_waits);
  if (caller_waits) completion->wait();
  return Completion(completion);
}

Completion Graph::replay() const {
  if (!impl_) throw ArgumentError("this graph is empty: record one with Device::begin_recording()");
  return impl_->replay();
}

std::size_t Graph::size() const { return impl_ ? impl_->size() : 0; }

}  // namespace metalcall
