// The disk cache's size limit and eviction (see cache_eviction.hpp), and what
// `python -m metalcall cache info|clear` does (metalcall/cache.hpp).
#include "core/cache_eviction.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "core/cache_files.hpp"
#include "core/disk_cache.hpp"
#include "core/hash.hpp"
#include "metalcall/cache.hpp"

namespace metalcall {

namespace {

constexpr std::uint64_t kDefaultLimit = std::uint64_t(1) << 30;
// A temporary file or build folder this old belongs to a process that died.
constexpr std::int64_t kStaleSeconds = 3600;

// ---- what is ours in an area folder ----

enum class Kind { entry, prelude, temp, other };

// The length of the cache key a name starts with: kKeyDigits lowercase hex digits (SHA-256),
// or 32 (the keys before 2026-12-05, left to age out), else 0.
std::size_t key_digits(const std::string& name) {
  std::size_t n = 0;
  while (n < name.size() && n < kKeyDigits && std::isxdigit(static_cast<unsigned char>(name[n])) &&
         !std::isupper(static_cast<unsigned char>(name[n])))
    ++n;
  if (n == kKeyDigits) return n;
  return n >= 32 && (n == name.size() || name[32] == '.') ? 32 : 0;
}

Kind classify(const std::string& name, bool is_dir) {
  const std::size_t digits = key_digits(name);
  if (is_dir) {
    if (name.rfind(kTempDirPrefix, 0) == 0) return Kind::temp;
    return digits && name.size() == digits ? Kind::prelude : Kind::other;
  }
  if (!digits || name.size() < digits + 2 || name[digits] != '.') return Kind::other;
  const std::string rest = name.substr(digits + 1);
  if (rest.size() > 4 && rest.compare(rest.size() - 4, 4, ".tmp") == 0) return Kind::temp;
  // The current extensions, and the checksum files of the format before headers.
  for (const char* ext : {"so", "cubin", "tr", "id", "ii", "pch", "so.sum", "cubin.sum"})
    if (rest == ext) return Kind::entry;
  return Kind::other;
}

struct Found {
  std::string path;
  Kind kind;
  bool is_dir;
  std::uint64_t bytes;
  std::int64_t last_used;  // nanoseconds: the later of access (touched on a hit) and modification
};

std::int64_t nanoseconds(const struct timespec& t) {
  return static_cast<std::int64_t>(t.tv_sec) * 1000000000 + static_cast<std::int64_t>(t.tv_nsec);
}
bool stale(const Found& f) {
  return static_cast<std::int64_t>(std::time(nullptr)) - f.last_used / 1000000000 > kStaleSeconds;
}

/** metalcall's files and folders in the root's area folders (only folders that pass the safety checks). */
std::vector<Found> scan(const std::string& root) {
  std::vector<Found> out;
  for (const char* area : kCacheAreas) {
    const std::string folder = root + "/" + area;
    if (!unsafe_folder_reason(folder, false).empty()) continue;
    DIR* dir = opendir(folder.c_str());
    if (!dir) continue;
    while (const dirent* e = readdir(dir)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      struct stat st;
      if (fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      const bool is_dir = S_ISDIR(st.st_mode);
      const Kind kind = classify(name, is_dir);
      if (kind == Kind::other) continue;
#ifdef __APPLE__
      const std::int64_t used = std::max(nanoseconds(st.st_atimespec), nanoseconds(st.st_mtimespec));
#else
      const std::int64_t used = std::max(nanoseconds(st.st_atim), nanoseconds(st.st_mtim));
#endif
      out.push_back({folder + "/" + name, kind, is_dir, static_cast<std::uint64_t>(st.st_size), used});
    }
    closedir(dir);
  }
  return out;
}

void remove_found(const Found& f) {
  if (f.is_dir) remove_tree(f.path);
  else unlink(f.path.c_str());
}

/** The root's lock file, locked; -1 when it cannot be (or, with `wait` false, another process holds it). */
int lock_root(const std::string& root, bool wait) {
  const std::string path = root + "/cache.lock";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
      flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/**
 * Removes stale temporaries, then the least recently used entries until the total is
 * at most `target`. Returns the total left, or nullopt when another process holds the lock.
 */
std::optional<std::uint64_t> evict(const std::string& root, std::uint64_t target) {
  const int lock = lock_root(root, /*wait=*/false);
  if (lock < 0) return std::nullopt;  // another process is evicting right now
  std::vector<Found> found = scan(root);
  std::vector<Found> entries;
  std::uint64_t total = 0;
  for (auto& f : found) {
    if (f.kind == Kind::temp && stale(f)) remove_found(f);
    if (f.kind != Kind::entry) continue;
    total += f.bytes;
    entries.push_back(std::move(f));
  }
  if (total > target) {
    std::sort(entries.begin(), entries.end(), [](const Found& a, const Found& b) { return a.last_used < b.last_used; });
    // A reader that opened an entry before it goes still reads it whole; one that
    // comes after finds a miss and rebuilds. Nothing is loaded from these paths.
    for (const auto& f : entries) {
      if (total <= target) break;
      if (unlink(f.path.c_str()) == 0) total -= std::min(total, f.bytes);
    }
  }
  close(lock);
  return total;
}

}  // namespace

std::optional<std::uint64_t> parse_cache_size(const std::string& text) {
  std::string s;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (s == "unlimited" || s == "none" || s == "inf") return kNoCacheLimit;
  std::size_t digits = 0;
  while (digits < s.size() && (std::isdigit(static_cast<unsigned char>(s[digits])) || s[digits] == '.')) ++digits;
  if (digits == 0) return std::nullopt;
  char* end = nullptr;
  const std::string number = s.substr(0, digits);
  const double value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !std::isfinite(value)) return std::nullopt;
  std::string unit = s.substr(digits);
  if (!unit.empty() && unit.back() == 'b') unit.pop_back();      // "MB", "GiB"
  if (!unit.empty() && unit.back() == 'i') unit.pop_back();      // "Mi", "Gi"
  double scale = 1;
  if (unit == "k") scale = 1024.0;
  else if (unit == "m") scale = 1024.0 * 1024;
  else if (unit == "g") scale = 1024.0 * 1024 * 1024;
  else if (unit == "t") scale = 1024.0 * 1024 * 1024 * 1024;
  else if (!unit.empty()) return std::nullopt;
  const double bytes = value * scale;
  if (bytes >= 1.8e19) return kNoCacheLimit;
  return static_cast<std::uint64_t>(bytes);
}

std::uint64_t cache_size_limit() {
  const char* text = std::getenv("METALCALL_CACHE_SIZE");
  if (!text || !*text) return kDefaultLimit;
  if (auto limit = parse_cache_size(text)) return *limit;
  static std::once_flag warned;
  std::call_once(warned, [text] {
    std::fprintf(stderr,
                 "metalcall: warning: METALCALL_CACHE_SIZE='%s' is not a size (e.g. 500M, 2G, 0 for no disk cache, "
                 "unlimited); using 1G\n", text);
  });
  return kDefaultLimit;
}

std::uint64_t largest_entry() { return std::min<std::uint64_t>(cache_size_limit(), std::uint64_t(4) << 30); }

void cache_stored(const std::string& root, std::uint64_t bytes) {
  const std::uint64_t limit = cache_size_limit();
  // Scanning is O(entries). This process keeps an estimate of the total (the last
  // scan plus what it wrote since) and scans when the estimate passes the limit, at
  // its first store, and after each sixteenth of the limit it wrote (other processes
  // write too): a cache far from full is scanned rarely.
  struct State {
    std::uint64_t estimate = 0, written = 0;
    bool scanned = false;
  };
  static std::mutex mutex;
  static auto& states = *new std::map<std::string, State>;
  {
    std::lock_guard<std::mutex> lock(mutex);
    State& s = states[root];
    s.estimate += bytes;
    s.written += bytes;
    const bool due = !s.scanned || (limit != kNoCacheLimit && (s.estimate > limit || s.written >= limit / 16));
    if (!due) return;
    s.scanned = true;
    s.written = 0;
  }
  // Evicted to nine tenths of the limit, so the next scan is not due at once.
  const auto left = evict(root, limit == kNoCacheLimit ? limit : limit - limit / 10);
  std::lock_guard<std::mutex> lock(mutex);
  if (left) states[root].estimate = *left;
}

DiskCacheInfo disk_cache_info() {
  DiskCacheInfo info;
  info.directory = default_cache_root();
  info.limit = cache_size_limit();
  if (info.limit == 0) info.problem = "METALCALL_CACHE_SIZE=0 turns the disk cache off";
  else info.problem = check_cache_root(info.directory);
  info.enabled = info.problem.empty();
  if (!info.enabled) return info;
  for (const auto& f : scan(info.directory)) {
    if (f.kind != Kind::entry) continue;
    ++info.entries;
    info.bytes += f.bytes;
  }
  return info;
}

std::size_t clear_disk_cache() {
  const std::string root = default_cache_root();
  if (!unsafe_folder_reason(root, true).empty()) return 0;  // not ours: nothing to clear
  const int lock = lock_root(root, /*wait=*/true);
  std::size_t removed = 0;
  for (const auto& f : scan(root)) {
    // A fresh temporary belongs to a compile running now.
    if (f.kind == Kind::temp && !stale(f)) continue;
    remove_found(f);
    if (f.kind == Kind::entry) ++removed;
  }
  if (lock >= 0) close(lock);
  return removed;
}

}  // namespace metalcall
