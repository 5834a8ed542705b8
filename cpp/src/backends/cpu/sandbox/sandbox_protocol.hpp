// What the sandboxed CPU device (parent) and its worker process share: the file
// descriptors the worker starts with, the control page both map, and the messages
// written into it. docs/security.md describes the design; sandbox_worker.cpp is the
// worker, worker_link.cpp the parent's side.
//
// A request or reply travels through the control page (shared memory): the writer
// fills the area, then bumps a sequence number the reader spins on for a while after
// each message, so that back-to-back calls cost no system call. A reader that stopped
// spinning sleeps in recv() on the socket, and the writer sends it a one-byte wake
// record. The socket also carries file descriptors (kernel objects) to the worker, and
// its end tells each side that the other has gone.
//
// The worker runs untrusted code: the parent reads nothing it wrote without bounds
// checks (a reply is copied out of the page first, then parsed).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <sched.h>
#include <string>
#include <type_traits>

namespace metalcall::cpu::sandbox {

// The worker's descriptors, placed by the parent when it starts the worker.
constexpr int kSocketFd = 3;   // its end of the socket pair
constexpr int kControlFd = 4;  // the control page (mapped, then closed)
constexpr int kArenaFd = 5;    // the Buffers' shared memory (mapped, then closed)
// Where a kernel object being loaded sits: the only descriptor the filter lets the
// worker map executable (sandbox_filter.cpp).
constexpr int kObjectFd = 6;

// The worker's exit statuses the parent explains.
constexpr int kExitViolation = 101;   // a system call the filter forbids (its number is in the page)
constexpr int kExitStartFailed = 102;  // start-up failed before the filter (message in the page)
constexpr int kExitProtocol = 103;     // a malformed request (a parent bug)

constexpr std::size_t kRequestBytes = std::size_t(256) << 10;
constexpr std::size_t kReplyBytes = std::size_t(64) << 10;
// Argument bytes (scalars, structs) up to this size travel in the request; larger ones
// are staged in the arena like foreign host memory.
constexpr std::size_t kInlineArgumentBytes = 4096;

enum class Op : std::uint32_t {
  load_module = 1,      // fd attached: dlopen it as module `id`
  prepare_program = 2,  // a kernel of a loaded module: reply its layout table
  define_program = 3,   // its final parameters (bindings from the layout): ready to call
  call = 4,             // run a dispatch
  release = 5,          // forget programs and modules the parent no longer has
};

enum class Status : std::uint32_t { ok = 0, execution_error = 1, device_error = 2 };

// Where a call argument's memory is.
enum class ArgPlace : std::uint32_t {
  none = 0,         // a null pointer (a parameter a false function constant removed)
  arena = 1,        // [offset, offset + nbytes) of the arena
  inline_bytes = 2, // nbytes follow in the request
  threadgroup = 3,  // [[threadgroup(i)]]: nbytes is its length
  texture = 4,      // a texture over [offset, offset + nbytes) of the arena; then the offset of its
                    // texel (0, 0) in that range, and its descriptor (the kernel's ABI, whose first
                    // member is that texel's address: the worker writes its own); then the count
                    // of the other textures of an array of textures, and per one its arena offset,
                    // length and texel (0, 0) offset (its descriptor is in the same bytes)
};

struct alignas(64) ControlPage {
  // Parent → worker.
  alignas(64) std::atomic<std::uint32_t> request_seq{0};
  std::atomic<std::uint32_t> request_bytes{0};
  std::atomic<std::uint32_t> worker_sleeping{0};
  std::atomic<bool> cancel{false};  // the running call should stop (checked between chunks)
  // Worker → parent (untrusted).
  alignas(64) std::atomic<std::uint32_t> reply_seq{0};
  std::atomic<std::uint32_t> reply_bytes{0};
  std::atomic<std::uint32_t> parent_sleeping{0};
  std::atomic<std::uint32_t> violation{0};  // 1 + the number of a forbidden system call
  alignas(64) unsigned char request[kRequestBytes];
  alignas(64) unsigned char reply[kReplyBytes];
};
static_assert(std::atomic<std::uint32_t>::is_always_lock_free && std::atomic<bool>::is_always_lock_free,
              "the control page's atomics are shared between processes: they must be lock-free");

constexpr std::size_t kControlBytes = (sizeof(ControlPage) + 4095) / 4096 * 4096;

/** Appends plain values to a message area; ok() is false once one did not fit. */
class MessageWriter {
 public:
  MessageWriter(unsigned char* area, std::size_t capacity) : area_(area), capacity_(capacity) {}
  template <class T>
  void put(const T& value) {
    static_assert(std::is_trivially_copyable<T>::value, "messages hold plain values");
    put_bytes(&value, sizeof value);
  }
  void put_bytes(const void* data, std::size_t n) {
    if (!ok_ || n > capacity_ - used_) {
      ok_ = false;
      return;
    }
    if (n) std::memcpy(area_ + used_, data, n);
    used_ += n;
  }
  void put_string(const std::string& s) {
    put<std::uint32_t>(static_cast<std::uint32_t>(s.size()));
    put_bytes(s.data(), s.size());
  }
  std::size_t used() const { return used_; }
  std::size_t room() const { return ok_ ? capacity_ - used_ : 0; }
  bool ok() const { return ok_; }

 private:
  unsigned char* area_;
  std::size_t capacity_;
  std::size_t used_ = 0;
  bool ok_ = true;
};

/** Reads what a MessageWriter wrote, with bounds checks; ok() is false after a short read. */
class MessageReader {
 public:
  MessageReader(const unsigned char* data, std::size_t size) : data_(data), size_(size) {}
  template <class T>
  T get() {
    static_assert(std::is_trivially_copyable<T>::value, "messages hold plain values");
    T value{};
    if (const unsigned char* p = take(sizeof value)) std::memcpy(&value, p, sizeof value);
    return value;
  }
  /** n bytes in place, or null (and !ok()) when fewer are left. */
  const unsigned char* take(std::size_t n) {
    if (!ok_ || n > size_ - pos_) {
      ok_ = false;
      return nullptr;
    }
    const unsigned char* p = data_ + pos_;
    pos_ += n;
    return p;
  }
  std::string get_string(std::size_t longest) {
    const std::uint32_t n = get<std::uint32_t>();
    if (n > longest) ok_ = false;
    const unsigned char* p = ok_ ? take(n) : nullptr;
    return p ? std::string(reinterpret_cast<const char*>(p), n) : std::string();
  }
  bool ok() const { return ok_; }

 private:
  const unsigned char* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

/**
 * One turn of a spin loop that waits for the other process: a pause at first, then a
 * sched_yield() each turn. The two processes may share a core (a woken process is often
 * placed on its waker's core), and one spinning there would keep the other, whose reply
 * it waits for, from running at all.
 */
inline void pause_or_yield(unsigned turn) {
  if (turn < 256) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#endif
  } else {
    sched_yield();
  }
}

/** The name under which the worker dlopens module `id` (no such file exists: sandbox_filter.cpp). */
inline std::string module_path(std::uint64_t id) { return "/metalcall-sandbox/kernel-" + std::to_string(id) + ".so"; }

}  // namespace metalcall::cpu::sandbox
