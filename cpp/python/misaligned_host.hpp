// Host memory a kernel cannot use in place, because it is not aligned as its parameter's element
// type requires (a NumPy view at an odd byte offset, an array Dask rebuilt from a transfer frame):
// copied into aligned memory for the call and back after it where the kernel may write it
// (DESIGN.md §2: "used in place where the backend can, else copied in, and copied back out").
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "metalcall/argument.hpp"
#include "metalcall/device.hpp"

namespace metalcall::python {

class MisalignedHostCopies {
 public:
  /**
   * Points each misaligned host argument of a pointer (or writable reference) parameter at an
   * aligned copy of its memory. The same memory passed twice shares one copy; misaligned memory
   * that overlaps another argument's is an ArgumentError (copies would not alias as it does).
   * Aligned arguments cost one test each; nothing is allocated for them.
   */
  void stage(const Kernel& kernel, std::vector<Argument>& args);
  /** Once the call returned (a call with host memory waits for it): writes the copies the kernel
   *  may have written back into place. */
  void copy_back() const;

 private:
  struct AlignedDelete {
    void operator()(std::byte* p) const;
  };
  struct Copy {
    std::byte* original;
    std::size_t nbytes;
    std::unique_ptr<std::byte[], AlignedDelete> data;
    bool written;
  };
  std::vector<Copy> copies_;
};

}  // namespace metalcall::python
