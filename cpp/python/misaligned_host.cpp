#include "misaligned_host.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>

#include "gil.hpp"
#include "metalcall/errors.hpp"

namespace metalcall::python {

namespace {

// What a copy is aligned to: a cache line, past any MSL element type's alignment.
constexpr std::size_t kCopyAlign = 64;

bool misaligned(const void* p, std::size_t align) {
  return align > 1 && reinterpret_cast<std::uintptr_t>(p) % align != 0;
}

bool overlap(const std::byte* a, std::size_t an, const std::byte* b, std::size_t bn) {
  return a < b + bn && b < a + an;
}

// The parameters that bind memory in place: pointers and writable references (a `constant T&`
// takes its bytes by value, at any alignment).
bool binds_memory(const ParamInfo& p) {
  return p.kind == ParamKind::buffer || (p.kind == ParamKind::reference && !p.is_const);
}

std::string name_of(const Kernel& kernel, const ParamInfo& p) {
  return "kernel '" + kernel.name() + "' argument '" + p.name + "'";
}

}  // namespace

void MisalignedHostCopies::AlignedDelete::operator()(std::byte* p) const {
  ::operator delete[](p, std::align_val_t(kCopyAlign));
}

void MisalignedHostCopies::stage(const Kernel& kernel, std::vector<Argument>& args) {
  // The common case first, without the parameters: host memory aligned to 16 bytes suits every
  // scalar and vector of four 4-byte components. Memory at 16 but not at a copy's alignment is
  // checked against the parameters only where one needs more (long3/long4, ulong3/ulong4, an
  // alignas(32) struct): NumPy aligns to 16, so half of such arrays are 16 bytes off.
  bool maybe = false, maybe_wide = false;
  for (const Argument& a : args) {
    if (a.kind != Argument::Kind::host || !a.host_nbytes) continue;
    maybe = maybe || misaligned(a.host_data, 16);
    maybe_wide = maybe_wide || misaligned(a.host_data, kCopyAlign);
  }
  if (!maybe && maybe_wide) {
    for (const ParamInfo& p : kernel.info().params) maybe = maybe || (binds_memory(p) && p.element_align > 16);
  }
  if (!maybe) return;
  // A batch or recording runs its calls later, from the memory as it then is: no copy is made
  // (the call's own check names the alignment).
  if (kernel.device().current_batch()) return;
  const std::vector<const ParamInfo*> params = kernel.info().buffer_params();
  for (std::size_t i = 0; i < args.size() && i < params.size(); ++i) {
    Argument& a = args[i];
    const ParamInfo& p = *params[i];
    if (a.kind != Argument::Kind::host || !a.host_nbytes || !binds_memory(p) || !misaligned(a.host_data, p.element_align))
      continue;
    auto* original = static_cast<std::byte*>(a.host_data);
    Copy* copy = nullptr;
    for (Copy& c : copies_) {
      if (c.original == original && c.nbytes == a.host_nbytes) copy = &c;
      else if (overlap(c.original, c.nbytes, original, a.host_nbytes))
        throw ArgumentError(name_of(kernel, p) + ": its memory is not aligned to " + std::to_string(p.element_align) +
                            " bytes and overlaps another misaligned argument's; pass aligned copies (x.copy())");
    }
    if (!copy) {
      // The memory may lie inside a Buffer that queued work still writes (a misaligned view of
      // np.asarray(buf)): the copy is taken once the device's work is done, as a view bound in
      // place would be ordered after it. Only calls that copy pay for the wait.
      if (copies_.empty()) {
        GilRelease release;
        kernel.device().synchronize();
      }
      std::unique_ptr<std::byte[], AlignedDelete> data(
          static_cast<std::byte*>(::operator new[](a.host_nbytes, std::align_val_t(kCopyAlign))));
      std::memcpy(data.get(), original, a.host_nbytes);
      copies_.push_back({original, a.host_nbytes, std::move(data), false});
      copy = &copies_.back();
    }
    // Writes to read-only memory are still refused by the call: the copy keeps the original's flag.
    copy->written = copy->written || (!p.is_const && a.host_writable);
    a.host_data = copy->data.get();
  }
  if (copies_.empty()) return;
  // Memory that other arguments reach in place would no longer alias the copy.
  for (std::size_t i = 0; i < args.size(); ++i) {
    const Argument& a = args[i];
    const std::byte* start = nullptr;
    std::size_t nbytes = 0;
    if (a.kind == Argument::Kind::host) {
      start = static_cast<const std::byte*>(a.host_data);
      nbytes = a.host_nbytes;
    } else if (a.kind == Argument::Kind::buffer && a.buffer) {
      start = static_cast<const std::byte*>(a.buffer.data());
      nbytes = a.buffer.nbytes();
    }
    if (!nbytes) continue;
    for (const Copy& c : copies_) {
      if (start == c.data.get()) break;  // a staged argument
      if (overlap(c.original, c.nbytes, start, nbytes)) {
        const std::string which = i < params.size() ? name_of(kernel, *params[i]) : "argument " + std::to_string(i);
        throw ArgumentError(which + " overlaps memory of another argument that is not aligned as its type requires "
                            "and is passed as a copy; pass aligned copies (x.copy())");
      }
    }
  }
}

void MisalignedHostCopies::copy_back() const {
  for (const Copy& c : copies_)
    if (c.written) std::memcpy(c.original, c.data.get(), c.nbytes);
}

}  // namespace metalcall::python
