// Graph: calls recorded once and replayed as one submission each time. A replay
// submits the recorded commands again through the device's queue, with hazard
// tracking, so every backend replays without going back to Python or re-checking
// arguments.
#include "core/impl.hpp"
#include "metalcall/errors.hpp"

namespace metalcall {

Completion GraphImpl::replay() {
  auto completion = std::make_shared<CompletionState>();
  if (commands_.empty()) {
    completion->finish(nullptr, 0.0);
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
