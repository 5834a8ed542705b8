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

void CompletionState::drive_with(std::shared_ptr<CompletionDriver> driver, std::uint64_t ticket) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    driver_ = std::move(driver);
    ticket_ = ticket;
  }
  cv_.notify_all();  // a waiter that came first now drives it
}

bool CompletionState::done() {
  if (finished()) return true;
  std::shared_ptr<CompletionDriver> driver;
  std::uint64_t ticket = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    driver = driver_;
    ticket = ticket_;
  }
  if (driver) driver->poll(ticket);
  return finished();
}

void CompletionState::wait() {
  if (!finished()) {
    if (!submitted()) {
      throw ArgumentError(
          "this call is recorded in a batch that has not been committed yet: "
          "leave the `with dev.batch()` block (or call commit()) before waiting on it");
    }
    std::shared_ptr<CompletionDriver> driver;
    std::uint64_t ticket = 0;
    {
      // A backend with a driver sets it right after submitting: wait for that, or for the end.
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [this] { return finished() || driver_; });
      driver = driver_;
      ticket = ticket_;
    }
    if (!finished() && driver) driver->wait(ticket);
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
