// Where a sandboxed call's foreign host memory (NumPy arrays and other buffer-protocol
// objects passed directly) is for the worker, which sees only the arena. Memory that is
// the arena's already (a NumPy view of a Buffer) is used in place; the rest is copied into
// the arena before the call and back after it where the kernel may write it. Arguments
// that overlap share one copy, so that a kernel sees them aliased, as it does in-process.
#pragma once

#include <cstddef>
#include <vector>

#include "backends/cpu/sandbox/shared_arena.hpp"

namespace metalcall::cpu::sandbox {

class Staging {
 public:
  explicit Staging(SharedArena& arena) : arena_(arena) {}
  ~Staging();  // gives the copies' arena ranges back
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;

  /** Host memory a call argument uses; `written`: the kernel may write it. */
  void add(const void* data, std::size_t nbytes, bool written);
  /** Copies the added memory that is not the arena's into it (after every add()). Throws DeviceError. */
  void copy_in();
  /** The arena offset of memory added before copy_in(). */
  std::size_t offset_of(const void* data) const;
  /** A copy of `nbytes` at `data` (a large struct argument) in the arena; its offset. */
  std::size_t copy_of(const void* data, std::size_t nbytes);
  /** Copies back what the kernel may have written. */
  void copy_out() const;

 private:
  struct Range {
    const unsigned char* begin;
    const unsigned char* end;
    bool written;
    std::size_t offset = 0;  // in the arena: where `begin` is
    bool copied = false;     // a copy (else the arena's own memory)
  };
  bool in_arena(const unsigned char* begin, const unsigned char* end) const;

  SharedArena& arena_;
  std::vector<Range> added_;   // as added, each pointing into one of merged_
  std::vector<Range> merged_;  // the copies (overlapping additions merged) and arena ranges
};

}  // namespace metalcall::cpu::sandbox
