// A cache of freed device memory blocks, by size class, that a backend's allocator keeps
// so that allocating again costs a lookup instead of a driver call (cuMemAllocManaged,
// mmap). The backend owns the blocks' memory: it takes blocks from here before asking
// the driver, gives freed blocks back, and frees what the cache refuses or drains.
// A block comes back only when its Buffer's storage is destroyed, and every queued or
// recorded call holds the storages it uses until it is done: a cached block is never in
// use on the device, so reuse needs no stream ordering of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace metalcall {

class BlockCache {
 public:
  struct Block {
    void* data = nullptr;
    std::size_t capacity = 0;
  };

  /** `limit`: most bytes kept cached; a freed block beyond it goes back to the driver. */
  explicit BlockCache(std::size_t limit) : limit_(limit) {}

  /**
   * The capacity a request of `nbytes` gets: rounded up to one of eight steps per power of
   * two (at most 12.5% more), and to a multiple of `granularity` (a power of two). Requests
   * of one class share blocks.
   */
  static std::size_t size_class(std::size_t nbytes, std::size_t granularity) {
    if (nbytes <= granularity) return granularity;
    std::size_t high = 1;
    while (high <= nbytes / 2) high <<= 1;  // highest power of two <= nbytes
    std::size_t step = high / 8;
    if (step < granularity) step = granularity;
    const std::size_t rounded = (nbytes + step - 1) / step * step;
    return rounded < nbytes ? nbytes : rounded;  // no overflow: keep the exact size
  }

  /** A cached block of exactly `capacity` bytes, or an empty Block. */
  Block take(std::size_t capacity) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(capacity);
    if (it == free_.end() || it->second.empty()) return {};
    Block b{it->second.back(), capacity};
    it->second.pop_back();
    cached_ -= capacity;
    return b;
  }

  /** Keeps a freed block; false when that would pass the limit (the caller frees it). */
  bool give(Block b) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (cached_ + b.capacity > limit_) return false;
    free_[b.capacity].push_back(b.data);
    cached_ += b.capacity;
    return true;
  }

  /** Removes every cached block; the caller frees them. */
  std::vector<Block> drain() {
    std::vector<Block> out;
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [capacity, blocks] : free_)
      for (void* data : blocks) out.push_back({data, capacity});
    free_.clear();
    cached_ = 0;
    return out;
  }

  std::size_t cached_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return cached_;
  }

 private:
  const std::size_t limit_;
  mutable std::mutex mutex_;
  std::map<std::size_t, std::vector<void*>> free_;  // capacity -> blocks
  std::size_t cached_ = 0;
};

}  // namespace metalcall
