// The on-disk cache (DESIGN.md §4): $METALCALL_CACHE_DIR or the platform's user
// cache folder. Writes are atomic (temp file + rename) and carry a checksum; a
// corrupt or foreign file is a miss, and a read-only folder only disables writes.
#pragma once

#include <optional>
#include <string>

namespace metalcall {

class DiskCache {
 public:
  /** The cache folder for `area` (e.g. "cpu"), created if possible. */
  explicit DiskCache(const std::string& area);

  const std::string& folder() const { return folder_; }
  bool writable() const { return writable_; }

  /** Path of the file for `key`, if it exists and its checksum matches. */
  std::optional<std::string> find(const std::string& key, const std::string& extension) const;
  /** Moves `temp_path` into the cache as `key` (atomic rename); false if it cannot. */
  bool store(const std::string& key, const std::string& extension, const std::string& temp_path) const;

  /**
   * A small entry kept in one self-checking file (content, then a checksum of key
   * and content): nullopt when missing, unreadable, corrupt or written for another key.
   */
  std::optional<std::string> load_entry(const std::string& key, const std::string& extension) const;
  /** Writes a small entry atomically; false if it cannot (a read-only cache). */
  bool save_entry(const std::string& key, const std::string& extension, const std::string& content) const;

  /** A folder for temporary files: inside the cache when writable, else under /tmp. */
  const std::string& scratch() const { return scratch_; }

 private:
  std::string folder_;
  std::string scratch_;
  bool writable_ = false;
};

/** The folder the cache lives in by default, before $METALCALL_CACHE_DIR. */
std::string default_cache_root();

/** Reads a whole regular file (never blocks on a FIFO or reads a folder); nullopt when it cannot. */
std::optional<std::string> read_file(const std::string& path);
/** Writes a whole file atomically (temp + rename). */
bool write_file_atomic(const std::string& path, const std::string& content);

}  // namespace metalcall
