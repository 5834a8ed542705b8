// Completion and CompletionState: waiting on submitted work.
#include <chrono>

#include "core/backend.hpp"
#include "metalcall/completion.hpp"
#include "metalcall/errors.hpp"

namespace metalcall {

void CompletionState::finish(std::exception_ptr error, double device_seconds) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = std::move(error);
    seconds_ = device_seconds;
    done_.store(true, std::memory_order_release);
  }
  cv_.notify_all();
}

void CompletionState::wait() {
  if (!done()) {
    if (!submitted()) {
      throw ArgumentError(
          "this call is recorded in a batch that has not been committed yet: "
          "leave the `with dev.batch()` block (or call commit()) before waiting on it");
    }
    if (WaitHelper* helper = helper_.load(std::memory_order_acquire)) helper->help(*this);
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return done(); });
  }
  if (error_) std::rethrow_exception(error_);
}

void Completion::wait() const {
  if (state_) state_->wait();
}

bool Completion::done() const { return !state_ || state_->done(); }

double Completion::gpu_time() const {
  if (!state_) return seconds_;
  return state_->done() ? state_->device_seconds() : 0.0;
}

bool Completion::submitted() const { return !state_ || state_->submitted(); }

}  // namespace metalcall
