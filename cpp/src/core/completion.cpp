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

void CompletionState::drive_with(CompletionDriver* driver, std::uint64_t ticket) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ticket_ = ticket;
    driver_.store(driver, std::memory_order_release);
  }
  cv_.notify_all();  // a waiter that came first now drives it
}

bool CompletionState::done() {
  if (finished()) return true;
  if (CompletionDriver* driver = driver_.load(std::memory_order_acquire)) driver->poll(*this);
  return finished();
}

void CompletionState::wait() {
  if (!finished()) {
    if (!submitted()) {
      throw ArgumentError(
          "this call is recorded in a batch that has not been committed yet: "
          "leave the `with dev.batch()` block (or call commit()) before waiting on it");
    }
    CompletionDriver* driver = nullptr;
    {
      // A backend with a driver sets it when it queues the work: wait for that, or for the end.
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [this] { return finished() || driver_.load(std::memory_order_acquire); });
      driver = driver_.load(std::memory_order_acquire);
    }
    if (!finished() && driver) driver->wait(*this);
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return finished(); });
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
