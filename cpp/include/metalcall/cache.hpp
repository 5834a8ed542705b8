// The on-disk compile cache as a user manages it: where it is, how much it holds,
// its size limit (METALCALL_CACHE_SIZE), and clearing it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace metalcall {

struct DiskCacheInfo {
  std::string directory;      // $METALCALL_CACHE_DIR or the platform's user cache folder
  bool enabled = false;       // false: nothing is read or written (see problem)
  std::string problem;        // why the cache is off, "" when it is on
  std::size_t entries = 0;    // cached files (compiled kernels, translations, ...)
  std::uint64_t bytes = 0;    // their total size
  std::uint64_t limit = 0;    // the size limit in bytes; UINT64_MAX: none; 0: the cache is off
};

/** The disk cache's folder, contents and limit (creates nothing but the folder itself). */
DiskCacheInfo disk_cache_info();

/**
 * Removes metalcall's entries from the disk cache (and stale temporary folders);
 * files that are not metalcall's are left alone. Returns how many entries it removed.
 */
std::size_t clear_disk_cache();

}  // namespace metalcall
