// Where a sandboxed call's foreign host memory is for the worker (see sandbox_staging.hpp).
#include "backends/cpu/sandbox/sandbox_staging.hpp"

#include <algorithm>
#include <cstring>

namespace metalcall::cpu::sandbox {

Staging::~Staging() {
  for (const Range& r : merged_)
    if (r.copied) arena_.release(r.offset, std::size_t(r.end - r.begin));
}

bool Staging::in_arena(const unsigned char* begin, const unsigned char* end) const {
  return begin >= arena_.base() && end <= arena_.base() + arena_.capacity();
}

void Staging::add(const void* data, std::size_t nbytes, bool written) {
  const auto* begin = static_cast<const unsigned char*>(data);
  added_.push_back({begin, begin + nbytes, written});
}

void Staging::copy_in() {
  std::vector<Range> ranges = added_;
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  for (const Range& r : ranges) {
    // Overlapping memory is one range: a kernel writing through one argument reads the
    // other's bytes changed, as it would in-process.
    if (!merged_.empty() && r.begin < merged_.back().end) {
      merged_.back().end = std::max(merged_.back().end, r.end);
      merged_.back().written = merged_.back().written || r.written;
    } else {
      merged_.push_back(r);
    }
  }
  for (Range& m : merged_) {
    if (in_arena(m.begin, m.end)) {
      m.offset = std::size_t(m.begin - arena_.base());
      continue;
    }
    const std::size_t nbytes = std::size_t(m.end - m.begin);
    m.offset = arena_.allocate(nbytes);
    m.copied = true;
    if (nbytes) std::memcpy(arena_.base() + m.offset, m.begin, nbytes);
  }
}

std::size_t Staging::offset_of(const void* data) const {
  const auto* p = static_cast<const unsigned char*>(data);
  // Within a range; an empty argument is its own range, found by its start. (Not the end of
  // a range: an array that starts where another ends is a range of its own.)
  for (const Range& m : merged_)
    if ((p >= m.begin && p < m.end) || p == m.begin) return m.offset + std::size_t(p - m.begin);
  return 0;  // not reached: every added pointer starts in a merged range
}

std::size_t Staging::copy_of(const void* data, std::size_t nbytes) {
  const auto* begin = static_cast<const unsigned char*>(data);
  Range r{begin, begin + nbytes, false};
  r.offset = arena_.allocate(nbytes);
  r.copied = true;
  std::memcpy(arena_.base() + r.offset, data, nbytes);
  merged_.push_back(r);  // after copy_in(): offset_of() finds the arguments' ranges first
  return r.offset;
}

void Staging::copy_out() const {
  for (const Range& m : merged_) {
    if (m.copied && m.written && m.end > m.begin)
      std::memcpy(const_cast<unsigned char*>(m.begin), arena_.base() + m.offset, std::size_t(m.end - m.begin));
  }
}

}  // namespace metalcall::cpu::sandbox
