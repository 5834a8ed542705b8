// Buffer: device memory the host can read and write in place (except device memory
// imported from another library: see host_visible()).
#pragma once

#include <cstddef>
#include <memory>

namespace metalcall {

class BufferStorage;

/** Memory owned by a device; host-visible (shared storage / unified memory). */
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(std::shared_ptr<BufferStorage> storage) : storage_(std::move(storage)) {}

  void* data() const;
  std::size_t nbytes() const;
  /** Waits until no submitted work uses this buffer (hazard tracking). */
  void wait_idle() const;
  /**
   * Whether the host may read and write data() in place: true for every Buffer a
   * Device allocates; false for GPU memory imported from another library (a torch
   * CUDA tensor), whose data() is a device pointer: copy it with Device::copy.
   */
  bool host_visible() const;
  /**
   * Whether the memory is read-only: a Device::wrap of memory its owner lets no one write (an
   * immutable JAX array, a read-only DLPack tensor or CUDA array interface). Kernels bind it
   * to const parameters only; copy_from_host and writable host views are refused.
   */
  bool read_only() const;
  /**
   * Copies n bytes of host memory into the start of the buffer, after waiting for work
   * that uses it. Prefer it to writing data() on the host: on CUDA the bytes go straight
   * to GPU memory (writing data() moves the pages to the host, and the next kernel faults
   * them back).
   */
  void copy_from_host(const void* src, std::size_t n) const;
  /**
   * Copies n bytes from `offset` into host memory `dst`, after waiting for work that uses
   * the buffer. Prefer it to reading data() for a few values (a reduction's result): on
   * CUDA the bytes come by the driver's copy and the pages stay on the GPU.
   */
  void copy_to_host(void* dst, std::size_t offset, std::size_t n) const;
  /** Host pointer after wait_idle(): the safe way to read results. */
  void* host_data() const {
    wait_idle();
    return data();
  }
  /**
   * Says the memory was handed to another library in place (DLPack, __cuda_array_interface__):
   * whose work on it this device cannot see, so when freed it goes back to the driver rather
   * than to the device's cache of reusable blocks.
   */
  void mark_shared() const;
  /**
   * A Buffer over the same memory (of a Device::wrap, whose owner may be null) that also
   * keeps `owner` alive until it and every call using it are gone: a cached import of
   * foreign memory, bound to one call with the object that owns the memory.
   */
  Buffer kept_with(std::shared_ptr<void> owner) const;
  explicit operator bool() const { return static_cast<bool>(storage_); }

  const std::shared_ptr<BufferStorage>& storage() const { return storage_; }

 private:
  std::shared_ptr<BufferStorage> storage_;
};

}  // namespace metalcall
