// File primitives of the disk cache that trust nothing they did not write: folders
// checked for owner and permissions before use, files opened once without following
// links or blocking on FIFOs and accepted only if regular and ours, atomic writes of
// private (0600) files, and private temporary folders that are always removed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace metalcall {

/**
 * Why `path` is not a safe cache folder, or "" when it is: a real directory owned by
 * this user that nobody else may write (group and others have no write bit). With
 * `follow_link`, a symbolic link that this user owns to such a directory is fine too
 * (the user's own METALCALL_CACHE_DIR may be a link; one planted in /tmp by another
 * user is owned by that user).
 */
std::string unsafe_folder_reason(const std::string& path, bool follow_link);

/** Creates `path` and its missing parents, each new one with mode 0700; true when it is a directory now. */
bool make_private_dirs(const std::string& path);

/** How read_owned_file treats a file. */
enum class ReadAs {
  cache_entry,     // nobody else may write it (no group/other write bit); marked as used (access time)
  private_output,  // a compiler's output in our private 0700 folder: its mode follows the umask, and is fine
};

/**
 * The whole content of `path` if it is a regular file owned by this user, opened
 * without following a final symlink and without blocking on a FIFO, and no larger than
 * `max_bytes`. The bytes are read from the one descriptor that was checked, so a file
 * swapped in after the check is never read. A cache entry must also be writable by
 * nobody else, and a hit sets its access time: the cache's least-recently-used order.
 */
std::optional<std::string> read_owned_file(const std::string& path, std::uint64_t max_bytes, ReadAs as);

/** Writes `content` to `path` atomically: a new 0600 file beside it (O_EXCL), then rename. */
bool write_file_atomic(const std::string& path, std::string_view content);

/** Removes `path` and everything below it; never follows a symbolic link. */
void remove_tree(const std::string& path);

/** $TMPDIR if set to an absolute path, else /tmp. */
std::string system_temp_folder();

/**
 * A new private (0700, random name, created with mkdtemp) folder inside `parent`,
 * removed with all its content when this object goes away, on errors too.
 * `path()` is empty when none could be made.
 */
class PrivateTempDir {
 public:
  explicit PrivateTempDir(const std::string& parent);
  ~PrivateTempDir();
  PrivateTempDir(const PrivateTempDir&) = delete;
  PrivateTempDir& operator=(const PrivateTempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/** The prefix of every temporary folder the cache makes (eviction removes stale ones). */
inline constexpr char kTempDirPrefix[] = "tmp-build-";

}  // namespace metalcall
