// The sandboxed CPU device's memory: one memfd, sparse and as large as twice the
// machine's memory, mapped once in this process and once in each worker. A Buffer
// is a range of it, so a call names its buffers by offset and NumPy views of them
// are plain memory here (zero-copy), with no descriptor or mapping per Buffer.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <utility>

#include "core/backend.hpp"

namespace metalcall::cpu::sandbox {

class SharedArena {
 public:
  /** Creates and maps the arena; throws DeviceError. */
  SharedArena();
  ~SharedArena();
  SharedArena(const SharedArena&) = delete;
  SharedArena& operator=(const SharedArena&) = delete;

  int fd() const { return fd_; }
  unsigned char* base() const { return base_; }
  std::size_t capacity() const { return capacity_; }
  /** The offset of `nbytes` zeroed bytes, 64-byte aligned (page-aligned from a page on);
   *  throws DeviceError when the arena has no room. */
  std::size_t allocate(std::size_t nbytes);
  /** Gives back what allocate(nbytes) returned; its whole pages go back to the system. */
  void release(std::size_t offset, std::size_t nbytes);

 private:
  static std::size_t rounded(std::size_t nbytes);
  /** In a forked child: the memfd is the parent's; this process keeps a private copy. */
  void reset_after_fork();
  void add_free(std::size_t offset, std::size_t size);
  void remove_free(std::map<std::size_t, std::size_t>::iterator it);

  int fd_ = -1;
  unsigned char* base_ = nullptr;
  std::size_t capacity_ = 0;
  std::size_t page_ = 4096;
  bool forked_ = false;  // a forked child's private copy: the memfd is never written (nor punched)
  std::mutex mutex_;
  // Free blocks by offset (for merging neighbours) and by (size, offset) (best fit).
  // Every page lying wholly inside a free block is a hole of the memfd: it reads as zero.
  std::map<std::size_t, std::size_t> free_by_offset_;
  std::set<std::pair<std::size_t, std::size_t>> free_by_size_;
};

/** A Buffer of the sandboxed device: a range of the arena. */
class ArenaStorage : public BufferStorage {
 public:
  ArenaStorage(std::shared_ptr<SharedArena> arena, std::size_t nbytes);
  ~ArenaStorage() override;
  std::size_t offset() const { return offset_; }

 private:
  std::shared_ptr<SharedArena> arena_;
  std::size_t offset_ = 0;
};

}  // namespace metalcall::cpu::sandbox
