// Buffer and its hazard tracking.
#include <cstdlib>
#include <cstring>

#include "core/backend.hpp"
#include "metalcall/buffer.hpp"
#include "metalcall/errors.hpp"
#include "metalcall/interrupt.hpp"

namespace metalcall {

BufferStorage::~BufferStorage() {
  if (in_use_) in_use_->fetch_sub(nbytes_, std::memory_order_relaxed);
  if (directory_) directory_->remove(this);
}

void BufferStorage::list_in(BufferDirectory* directory, const std::shared_ptr<BufferStorage>& self) {
  if (directory_ || !directory || !host_visible_ || nbytes_ == 0) return;
  directory_ = directory;
  directory_->add(self);
}

// ---- BufferDirectory ----

void BufferDirectory::add(const std::shared_ptr<BufferStorage>& storage) {
  std::lock_guard<std::mutex> lock(mutex_);
  // An entry at the same address is a storage being destroyed (its memory went back to a cache):
  // its destructor will find this one is not its own.
  by_start_[reinterpret_cast<std::uintptr_t>(storage->data())] = Entry{storage.get(), storage->nbytes(), storage};
}

void BufferDirectory::remove(const BufferStorage* storage) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_start_.find(reinterpret_cast<std::uintptr_t>(storage->data()));
  if (it != by_start_.end() && it->second.storage == storage) by_start_.erase(it);
}

std::shared_ptr<BufferStorage> BufferDirectory::find(const void* data, std::size_t nbytes, std::size_t* offset) const {
  const auto start = reinterpret_cast<std::uintptr_t>(data);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_start_.upper_bound(start);
  if (it == by_start_.begin()) return nullptr;
  --it;  // the last Buffer that starts at or before `data`
  const std::uintptr_t inside = start - it->first;
  if (inside >= it->second.nbytes || nbytes > it->second.nbytes - inside) return nullptr;
  std::shared_ptr<BufferStorage> storage = it->second.live.lock();
  if (storage) *offset = static_cast<std::size_t>(inside);
  return storage;
}

void BufferStorage::count_in(std::atomic<std::size_t>* in_use) {
  if (in_use_) in_use_->fetch_sub(nbytes_, std::memory_order_relaxed);
  in_use_ = in_use;
  if (in_use_) in_use_->fetch_add(nbytes_, std::memory_order_relaxed);
}

void BufferStorage::set_last_use(const std::shared_ptr<CompletionState>& use) {
  std::lock_guard<std::mutex> lock(mutex_);
  last_use_ = use;
}

void BufferStorage::wait_idle() {
  std::shared_ptr<CompletionState> last;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    last = last_use_;
  }
  // Errors belong to whoever waits on the call's Completion; a view only needs
  // the work to have stopped touching the memory. Unsubmitted batch work has
  // not touched it yet.
  if (last && last->submitted() && !last->done()) {
    try {
      last->wait();
    } catch (const Interrupted&) {
      throw;  // Ctrl-C: no view is given
    } catch (...) {
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (last_use_ == last && last && last->done()) last_use_.reset();
}

std::shared_ptr<CompletionState> BufferStorage::unfinished_use() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (last_use_ && last_use_->submitted() && !last_use_->finished()) return last_use_;
  return nullptr;
}

void BufferStorage::copy_range_to(void* dst, std::size_t offset, std::size_t n) const {
  if (n) std::memcpy(dst, static_cast<const unsigned char*>(data_) + offset, n);
}

void BufferStorage::copy_from(const void* src, std::size_t n) {
  if (!host_visible_) {
    throw ArgumentError("[metalcall] cannot write host data into GPU memory imported from another library in place; "
                        "write it with that library");
  }
  if (n) std::memcpy(data_, src, n);
}

void Buffer::copy_from_host(const void* src, std::size_t n) const {
  if (!storage_) throw ArgumentError("[metalcall] cannot write into an empty (default-constructed) Buffer");
  if (storage_->read_only()) {
    throw ArgumentError("[metalcall] cannot write into read-only memory (its owner, such as an immutable JAX array, "
                        "lets no one write it); write a copy (dev.copy(buf))");
  }
  if (n > storage_->nbytes()) {
    throw ArgumentError("[metalcall] cannot write " + std::to_string(n) + " bytes into a buffer of " +
                        std::to_string(storage_->nbytes()) + " bytes");
  }
  storage_->wait_idle();
  storage_->copy_from(src, n);
}

void Buffer::copy_to_host(void* dst, std::size_t offset, std::size_t n) const {
  if (!storage_) throw ArgumentError("[metalcall] cannot read an empty (default-constructed) Buffer");
  if (offset > storage_->nbytes() || n > storage_->nbytes() - offset) {
    throw ArgumentError("[metalcall] cannot read " + std::to_string(n) + " bytes at offset " + std::to_string(offset) +
                        " of a buffer of " + std::to_string(storage_->nbytes()) + " bytes");
  }
  if (const auto use = storage_->unfinished_use()) {
    bool read = false;
    try {
      read = storage_->read_after(*use, dst, offset, n);
    } catch (const Interrupted&) {
      use->request_cancel();  // as a wait for it would (Ctrl-C stops what it waited for)
      throw;
    }
    if (read) return;
  }
  storage_->wait_idle();
  storage_->read_to_host(dst, offset, n);
}

void Buffer::mark_shared() const {
  if (storage_) storage_->mark_shared();
}

namespace {
// Another storage's memory, plus an owner to keep alive; copies go through that storage.
class KeptStorage final : public BufferStorage {
 public:
  KeptStorage(std::shared_ptr<BufferStorage> base, std::shared_ptr<void> owner)
      : BufferStorage(base->data(), base->nbytes(), base->host_visible()), base_(std::move(base)),
        owner_(std::move(owner)) {
    set_home(base_->home());
    read_only_ = base_->read_only();
  }
  void copy_range_to(void* dst, std::size_t offset, std::size_t n) const override {
    base_->copy_range_to(dst, offset, n);
  }
  void read_to_host(void* dst, std::size_t offset, std::size_t n) const override { base_->read_to_host(dst, offset, n); }
  bool read_after(const CompletionState& use, void* dst, std::size_t offset, std::size_t n) const override {
    return base_->read_after(use, dst, offset, n);
  }
  void copy_from(const void* src, std::size_t n) override { base_->copy_from(src, n); }

 private:
  std::shared_ptr<BufferStorage> base_;
  std::shared_ptr<void> owner_;
};
}  // namespace

Buffer Buffer::kept_with(std::shared_ptr<void> owner) const {
  if (!storage_) throw ArgumentError("[metalcall] cannot share an empty (default-constructed) Buffer");
  return Buffer(std::make_shared<KeptStorage>(storage_, std::move(owner)));
}

void* Buffer::data() const { return storage_ ? storage_->data() : nullptr; }

std::size_t Buffer::nbytes() const { return storage_ ? storage_->nbytes() : 0; }

bool Buffer::host_visible() const { return !storage_ || storage_->host_visible(); }

bool Buffer::read_only() const { return storage_ && storage_->read_only(); }

void Buffer::wait_idle() const {
  if (storage_) storage_->wait_idle();
}

}  // namespace metalcall
