// Completion and CompletionState: waiting on submitted work.
#include <chrono>
#include <thread>

#include "core/backend.hpp"
#include "metalcall/completion.hpp"
#include "core/interrupt.hpp"
#include "metalcall/errors.hpp"
#include "metalcall/interrupt.hpp"

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

void CompletionState::request_cancel(const char* reason) {
  const char* none = nullptr;
  cancel_reason_.compare_exchange_strong(none, reason, std::memory_order_acq_rel);
  if (cancel_.exchange(true, std::memory_order_acq_rel) || finished()) return;
  if (CompletionDriver* driver = driver_.load(std::memory_order_acquire)) driver->cancel(*this);
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

namespace {
// How long an interruptible waiter sleeps between checks; a waiter that must poll the
// driver (CUDA) first spins on it for kSpinPoll (a short GPU call ends within
// microseconds, as fast as the driver's own blocking wait would see it), then sleeps
// poll_interval (core/interrupt.hpp) up to kSlice.
constexpr std::chrono::milliseconds kSlice{20};
constexpr std::chrono::microseconds kSpinPoll{1000};
}  // namespace

bool CompletionState::block(bool interruptible, bool drive, const std::chrono::steady_clock::time_point* deadline) {
  using Clock = std::chrono::steady_clock;
  // Without an InterruptScope or a deadline, waits sleep until woken (no periodic wake-ups).
  const bool polled = interruptible && interrupt_check_installed();
  const bool sliced = polled || deadline;
  auto interrupted = [&] {
    if (!polled || !interrupt_requested()) return false;
    request_cancel();
    return true;
  };
  auto slice_end = [&](Clock::duration slice) {
    Clock::time_point end = Clock::now() + slice;
    return deadline && *deadline < end ? *deadline : end;
  };
  CompletionDriver* driver = nullptr;
  {
    // A backend with a driver sets it when it queues the work: wait for that, or for the end.
    std::unique_lock<std::mutex> lock(mutex_);
    auto ready = [this] { return finished() || driver_.load(std::memory_order_acquire); };
    if (!sliced) cv_.wait(lock, ready);
    while (!ready()) {
      cv_.wait_until(lock, slice_end(kSlice), ready);
      if (interrupted()) throw Interrupted();
      if (deadline && Clock::now() >= *deadline) return finished();
    }
    driver = driver_.load(std::memory_order_acquire);
  }
  // The driver may run the work here (the CPU does, checking the InterruptScope between
  // chunks); a driver that would block uninterruptibly is polled instead.
  const bool poll_driver = driver && (deadline || !drive || (polled && !driver->waits_interruptibly()));
  if (!finished() && driver && !poll_driver) driver->wait(*this);
  if (polled && InterruptScope::interrupted()) {
    request_cancel();
    throw Interrupted();
  }
  if (poll_driver && !driver->waits_interruptibly()) {
    Clock::time_point spin_end = Clock::now() + kSpinPoll;
    if (deadline && *deadline < spin_end) spin_end = *deadline;
    while (!finished() && Clock::now() < spin_end) {
      driver->poll(*this);
      if (!finished()) std::this_thread::yield();
    }
  }
  std::unique_lock<std::mutex> lock(mutex_);
  auto done = [this] { return finished(); };
  if (!sliced && !poll_driver) {
    cv_.wait(lock, done);
    return true;
  }
  const Clock::time_point polling_since = Clock::now();
  Clock::duration slice = poll_driver ? poll_interval(Clock::duration(0), kSlice) : Clock::duration(kSlice);
  while (!finished()) {
    cv_.wait_until(lock, slice_end(slice), done);
    if (poll_driver && !finished()) {
      lock.unlock();
      driver->poll(*this);
      lock.lock();
      slice = poll_interval(Clock::now() - polling_since, kSlice);
    }
    if (finished()) break;
    if (interrupted()) throw Interrupted();
    if (deadline && Clock::now() >= *deadline) return false;
  }
  return true;
}

void CompletionState::wait(bool interruptible) {
  if (!finished()) {
    if (!submitted()) {
      throw ArgumentError(
          "this call is recorded in a batch that has not been committed yet: "
          "leave the `with dev.batch()` block (or call commit()) before waiting on it");
    }
    block(interruptible, /*drive=*/true, nullptr);
  }
  // Work this thread ran and stopped for its InterruptScope: the interruption is the news.
  if (interruptible && InterruptScope::interrupted()) throw Interrupted();
  if (error_) std::rethrow_exception(error_);
}

void CompletionState::wait_for_borrowed_memory() {
  try {
    wait();
  } catch (const Interrupted&) {
    try {
      wait(/*interruptible=*/false);  // cancelled: it stops at its next chunk
    } catch (...) {
      // The interruption is what the caller reports.
    }
    throw;
  }
}

bool CompletionState::wait_for(double seconds) {
  if (finished()) return true;
  if (!submitted()) {
    throw ArgumentError(
        "this call is recorded in a batch that has not been committed yet: "
        "leave the `with dev.batch()` block (or call commit()) before waiting on it");
  }
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(seconds < 0 ? 0 : seconds > 1e9 ? 1e9 : seconds));
  return block(/*interruptible=*/true, /*drive=*/false, &deadline);
}

void Completion::wait() const {
  if (state_) state_->wait();
}

bool Completion::wait_for(double seconds) const { return !state_ || state_->wait_for(seconds); }

bool Completion::done() const { return !state_ || state_->done(); }

void Completion::cancel(const char* reason) const {
  if (state_ && !state_->done()) state_->request_cancel(reason);
}

bool Completion::wait_for_or_cancel(double seconds, const char* reason) const {
  if (wait_for(seconds)) return true;
  cancel(reason);
  return false;
}

bool Completion::interrupted() const { return state_ && state_->cancel_flag().load(std::memory_order_relaxed); }

double Completion::gpu_time() const {
  if (!state_) return seconds_;
  return state_->done() ? state_->device_seconds() : 0.0;
}

bool Completion::submitted() const { return !state_ || state_->submitted(); }

}  // namespace metalcall
