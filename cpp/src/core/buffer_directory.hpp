// The host memory of one device's live Buffers, by address (defined in buffer.cpp). Core binds a
// host array that lies inside one (np.asarray(buf)[4:], a memoryview of a Buffer) as that Buffer at
// an offset, so that hazard tracking and the backends see one memory; as foreign host memory it was
// staged by the Metal backend, the sandbox and CUDA, and copied back when the submission ended,
// after calls that had used the Buffer itself (P2.1 defect 2).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

namespace metalcall {

class BufferStorage;

class BufferDirectory {
 public:
  /** Lists a new Buffer's memory (Device::allocate); it is taken out when the storage is destroyed. */
  void add(const std::shared_ptr<BufferStorage>& storage);
  /** Called by ~BufferStorage: forgets `storage`'s entry (not a later one at the same address). */
  void remove(const BufferStorage* storage);
  /** The live Buffer whose memory holds all of [data, data + nbytes), with the offset of `data` in it; null if none. */
  std::shared_ptr<BufferStorage> find(const void* data, std::size_t nbytes, std::size_t* offset) const;

 private:
  struct Entry {
    const BufferStorage* storage;
    std::size_t nbytes;
    std::weak_ptr<BufferStorage> live;  // expired while its storage is being destroyed
  };
  mutable std::mutex mutex_;
  std::map<std::uintptr_t, Entry> by_start_;
};

}  // namespace metalcall
