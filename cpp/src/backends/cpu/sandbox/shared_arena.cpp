// The sandboxed CPU device's memory (see shared_arena.hpp).
#include "backends/cpu/sandbox/shared_arena.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

#include "backends/cpu/fork_guard.hpp"
#include "metalcall/errors.hpp"

namespace metalcall::cpu::sandbox {

namespace {

constexpr std::size_t kAlign = 64;
constexpr std::size_t kGiB = std::size_t(1) << 30;

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }
std::size_t round_down(std::size_t n, std::size_t to) { return n / to * to; }

// Twice the machine's memory (the in-process device may overcommit as far), at least 4 GiB.
std::size_t wanted_capacity() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  const std::size_t memory = pages > 0 && page > 0 ? std::size_t(pages) * std::size_t(page) : 4 * kGiB;
  return std::max(4 * kGiB, round_up(2 * memory, kGiB));
}

}  // namespace

SharedArena::SharedArena() {
  page_ = static_cast<std::size_t>(sysconf(_SC_PAGE_SIZE));
  fd_ = memfd_create("metalcall-sandbox-buffers", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd_ < 0) {
    throw DeviceError(std::string("[cpu sandbox] cannot create the Buffers' shared memory (memfd_create: ") +
                      std::strerror(errno) + "); the sandbox needs Linux 3.17 or later");
  }
  // Sparse: only pages in use take memory. If the address space is limited (ulimit -v),
  // a smaller arena is better than none.
  for (std::size_t size = wanted_capacity(); size >= kGiB / 4; size /= 2) {
    if (ftruncate(fd_, static_cast<off_t>(size)) != 0) continue;
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd_, 0);
    if (p == MAP_FAILED) continue;
    base_ = static_cast<unsigned char*>(p);
    capacity_ = size;
    break;
  }
  if (!base_) {
    close(fd_);
    throw DeviceError(std::string("[cpu sandbox] cannot map the Buffers' shared memory: ") + std::strerror(errno));
  }
  // A worker cannot shrink it under this process's feet (reading a Buffer would fault).
  (void)fcntl(fd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  add_free(0, capacity_);
  reset_on_fork(this, [](void* self) { static_cast<SharedArena*>(self)->reset_after_fork(); });
}

void SharedArena::reset_after_fork() {
  // The pages are the parent's Buffers: this child gets a private copy of them (its writes
  // stay its own), and gives nothing back to the memfd (a hole punched here would empty the
  // parent's Buffers). Its new Buffers are zeroed by hand.
  new (&mutex_) std::mutex;
  (void)mmap(base_, capacity_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED | MAP_NORESERVE, fd_, 0);
  forked_ = true;
}

SharedArena::~SharedArena() {
  forget_on_fork(this);
  if (base_) munmap(base_, capacity_);
  if (fd_ >= 0) close(fd_);
}

std::size_t SharedArena::rounded(std::size_t nbytes) {
  return std::max(kAlign, round_up(nbytes, kAlign));
}

void SharedArena::add_free(std::size_t offset, std::size_t size) {
  free_by_offset_.emplace(offset, size);
  free_by_size_.emplace(size, offset);
}

void SharedArena::remove_free(std::map<std::size_t, std::size_t>::iterator it) {
  free_by_size_.erase({it->second, it->first});
  free_by_offset_.erase(it);
}

std::size_t SharedArena::allocate(std::size_t nbytes) {
  if (nbytes > capacity_) {
    throw DeviceError("[cpu sandbox] cannot allocate " + std::to_string(nbytes) + " bytes: the sandbox's memory holds " +
                      std::to_string(capacity_) + " bytes in all");
  }
  const std::size_t size = rounded(nbytes);
  const std::size_t align = size >= page_ ? page_ : kAlign;
  std::size_t offset = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Best fit: the smallest free block that holds `size` once aligned.
    auto it = free_by_size_.lower_bound({size, 0});
    for (; it != free_by_size_.end(); ++it) {
      const std::size_t start = round_up(it->second, align);
      if (start - it->second + size <= it->first) break;
    }
    if (it == free_by_size_.end()) {
      throw DeviceError("[cpu sandbox] cannot allocate " + std::to_string(nbytes) +
                        " bytes: the sandbox's shared memory is full (" + std::to_string(capacity_) + " bytes)");
    }
    const std::size_t block = it->second, block_size = it->first;
    remove_free(free_by_offset_.find(block));
    offset = round_up(block, align);
    if (offset > block) add_free(block, offset - block);
    if (offset + size < block + block_size) add_free(offset + size, block + block_size - offset - size);
  }
  // Whole pages of a free block are holes (zero); the parts of pages it shared with
  // other Buffers may hold their old bytes. (A forked child punches no holes.)
  const std::size_t end = offset + size;
  if (forked_) {
    std::memset(base_ + offset, 0, size);
    return offset;
  }
  const std::size_t head_end = std::min(end, round_up(offset, page_));
  std::memset(base_ + offset, 0, head_end - offset);
  if (head_end < end) {
    const std::size_t tail = std::max(head_end, round_down(end, page_));
    std::memset(base_ + tail, 0, end - tail);
  }
  return offset;
}

void SharedArena::release(std::size_t offset, std::size_t nbytes) {
  const std::size_t size = rounded(nbytes);
  std::size_t begin = offset, end = offset + size;
  std::lock_guard<std::mutex> lock(mutex_);
  auto next = free_by_offset_.lower_bound(offset);
  if (next != free_by_offset_.end() && next->first == end) {
    end += next->second;
    remove_free(next);
  }
  auto prev = free_by_offset_.lower_bound(offset);
  if (prev != free_by_offset_.begin()) {
    --prev;
    if (prev->first + prev->second == begin) {
      begin = prev->first;
      remove_free(prev);
    }
  }
  add_free(begin, end - begin);
  // Punch the pages that now lie wholly in free memory and held part of this Buffer.
  const std::size_t punch_begin = std::max(round_down(offset, page_), round_up(begin, page_));
  const std::size_t punch_end = std::min(round_up(offset + size, page_), round_down(end, page_));
  if (forked_) return;
  if (punch_begin < punch_end &&
      fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(punch_begin),
                static_cast<off_t>(punch_end - punch_begin)) != 0) {
    std::memset(base_ + punch_begin, 0, punch_end - punch_begin);  // free pages must read as zero
  }
}

ArenaStorage::ArenaStorage(std::shared_ptr<SharedArena> arena, std::size_t nbytes)
    : BufferStorage(nullptr, nbytes), arena_(std::move(arena)) {
  offset_ = arena_->allocate(nbytes);
  data_ = arena_->base() + offset_;
}

ArenaStorage::~ArenaStorage() { arena_->release(offset_, nbytes_); }

}  // namespace metalcall::cpu::sandbox
