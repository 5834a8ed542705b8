// Staging buffers kept for reuse across submissions, so that repeated calls on the same NumPy
// arrays do not allocate; bounded in count and bytes. The policy in plain C++, shared by both
// Metal drivers: metal_queue.mm keeps MTLBuffers in it, the simulator its own memory.
#pragma once

#include <cstddef>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "backends/metal_plan/metal_resources.hpp"

namespace metalcall::metal {

template <class Handle>
class StagingPool {
 public:
  static constexpr std::size_t kPage = 4096;
  static constexpr std::size_t kMaxBuffers = 16;
  static constexpr std::size_t kMaxBytes = std::size_t(64) << 20;

  /** The length of a new staging buffer for `nbytes`: whole pages. */
  static std::size_t allocation_length(std::size_t nbytes) { return round_up(nbytes, kPage); }

  /** A kept buffer for `nbytes`: the smallest that fits without wasting more than half of it; none if none. */
  std::optional<std::pair<Handle, std::size_t>> take(std::size_t nbytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (it->second >= nbytes && it->second <= 2 * nbytes + kPage && (best == free_.end() || it->second < best->second))
        best = it;
    if (best == free_.end()) return std::nullopt;
    std::pair<Handle, std::size_t> taken = std::move(*best);
    free_.erase(best);
    pooled_bytes_ -= taken.second;
    return taken;
  }

  /** Keeps `buffer` (`length` bytes) for reuse; false when the pool is full (the caller lets it go). */
  bool give_back(Handle buffer, std::size_t length) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.size() >= kMaxBuffers || pooled_bytes_ + length > kMaxBytes) return false;
    free_.emplace_back(std::move(buffer), length);
    pooled_bytes_ += length;
    return true;
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<Handle, std::size_t>> free_;
  std::size_t pooled_bytes_ = 0;
};

}  // namespace metalcall::metal
