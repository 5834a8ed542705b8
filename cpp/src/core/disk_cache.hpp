// The on-disk cache (DESIGN.md §4): $METALCALL_CACHE_DIR or the platform's user
// cache folder. It trusts nothing it did not write: folders must be ours and writable
// by nobody else (else the cache is off, with one warning), entries are regular files
// of ours read through one checked descriptor, and each entry carries a header that
// binds its full name (area, key, extension), its size and a checksum of its content:
// a damaged, truncated, renamed or foreign file is a miss. Writes are atomic (temp
// file + rename); a read-only folder only disables writes. The size limit and LRU
// eviction are in cache_eviction.hpp.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/cache_files.hpp"

namespace metalcall {

class DiskCache {
 public:
  /** The cache folder for `area` (one of kCacheAreas), created (0700) and checked. */
  explicit DiskCache(const std::string& area);

  const std::string& folder() const { return folder_; }
  /** Entries may be read: the folder exists, is ours and nobody else may write it. */
  bool readable() const { return readable_; }
  bool writable() const { return writable_; }

  /**
   * The content stored for `key` + `extension`: nullopt when missing, unreadable, not
   * a regular file of ours, corrupt, truncated, or written for another name. A hit
   * marks the entry as recently used.
   */
  std::optional<std::string> load_entry(const std::string& key, const std::string& extension) const;
  /** Stores `content` under `key` + `extension` atomically; false if it cannot (a read-only cache). */
  bool save_entry(const std::string& key, const std::string& extension, std::string_view content) const;

  /** Where temporary build folders go: inside the cache when writable (eviction reaps stale ones), else $TMPDIR. */
  std::string temp_parent() const;

 private:
  std::string area_;
  std::string root_;
  std::string folder_;
  bool readable_ = false;
  bool writable_ = false;
};

/**
 * The areas (subfolders) the cache is made of: `cache clear` removes entries from these
 * only. "prelude" held the MSL headers before each build wrote its own copy: cleared.
 * "verify" holds the translation verifier's precompiled headers (cpu_verify_head.hpp).
 */
inline constexpr const char* kCacheAreas[] = {"cpu", "cuda", "translations", "compilers", "prelude", "verify"};

/** The folder the cache lives in: $METALCALL_CACHE_DIR, else the platform's user cache folder. */
std::string default_cache_root();

/**
 * Whether the cache root may be used, creating it (0700) if missing: "" when it is
 * safe, else why not. An unsafe root (another user's, or writable by others) is
 * reported once per process on stderr and the disk cache is off.
 */
std::string check_cache_root(const std::string& root);

/** The entry file format: header + content (exposed for the cache tools and tests of the format). */
std::string encode_entry(const std::string& name, std::string_view content);
std::optional<std::string> decode_entry(const std::string& name, std::string file);

/** Reads a whole regular file (never blocks on a FIFO or reads a folder); nullopt when it cannot. */
std::optional<std::string> read_file(const std::string& path);

}  // namespace metalcall
