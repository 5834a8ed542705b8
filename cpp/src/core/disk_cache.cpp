#include "core/disk_cache.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

#include "core/hash.hpp"

namespace metalcall {

namespace {

bool make_dirs(const std::string& path) {
  std::string partial;
  for (std::size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || (path[i] == '/' && i > 0)) {
      partial = path.substr(0, i);
      if (mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) return false;
    }
  }
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string unique_suffix() {
  static unsigned counter = 0;
  return "." + std::to_string(getpid()) + "." + std::to_string(__atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED)) + ".tmp";
}

}  // namespace

std::string default_cache_root() {
  if (const char* dir = std::getenv("METALCALL_CACHE_DIR"); dir && *dir) return dir;
  const char* home = std::getenv("HOME");
#ifdef __APPLE__
  if (home && *home) return std::string(home) + "/Library/Caches/metalcall";
#else
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/metalcall";
  if (home && *home) return std::string(home) + "/.cache/metalcall";
#endif
  return "/tmp/metalcall-cache-" + std::to_string(getuid());
}

std::optional<std::string> read_file(const std::string& path) {
  // O_NONBLOCK: a FIFO planted in the cache must not hang the process; only
  // regular files are read.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return std::nullopt;
  }
  std::string out;
  // st_size is 0 for /proc files: read until end of file either way. One byte
  // more than the size, so the read that finds the end needs no larger buffer
  // (doubling a 600 KB buffer to find it cost a warm compile a third of its time).
  out.resize(st.st_size > 0 ? static_cast<std::size_t>(st.st_size) + 1 : 4096);
  std::size_t used = 0;
  for (;;) {
    if (used == out.size()) out.resize(out.size() * 2);
    const ssize_t n = read(fd, &out[used], out.size() - used);
    if (n > 0) {
      used += static_cast<std::size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0) {
      close(fd);
      return std::nullopt;
    } else {
      break;
    }
  }
  close(fd);
  out.resize(used);
  return out;
}

bool write_file_atomic(const std::string& path, const std::string& content) {
  const std::string temp = path + unique_suffix();
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) return false;
    out << content;
    out.close();
    if (!out) {
      std::remove(temp.c_str());
      return false;
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    std::remove(temp.c_str());
    return false;
  }
  return true;
}

DiskCache::DiskCache(const std::string& area) {
  folder_ = default_cache_root() + "/" + area;
  writable_ = make_dirs(folder_) && access(folder_.c_str(), W_OK) == 0;
  if (writable_) {
    scratch_ = folder_;
  } else {
    // One private temporary folder per process, not one per use of the cache.
    static const std::string fallback = [] {
      char pattern[] = "/tmp/metalcall-XXXXXX";
      const char* made = mkdtemp(pattern);
      return std::string(made ? made : "/tmp");
    }();
    scratch_ = fallback;
  }
}

std::optional<std::string> DiskCache::find(const std::string& key, const std::string& extension) const {
  const std::string path = folder_ + "/" + key + extension;
  auto content = read_file(path);
  auto sum = read_file(path + ".sum");
  if (!content || !sum) return std::nullopt;
  if (ContentHash().add(*content).hex() != *sum) return std::nullopt;
  return path;
}

bool DiskCache::store(const std::string& key, const std::string& extension, const std::string& temp_path) const {
  if (!writable_) return false;
  auto content = read_file(temp_path);
  if (!content) return false;
  const std::string path = folder_ + "/" + key + extension;
  // Checksum first: a file without a matching checksum is a miss, never trusted.
  if (!write_file_atomic(path + ".sum", ContentHash().add(*content).hex())) return false;
  return std::rename(temp_path.c_str(), path.c_str()) == 0;
}

namespace {
constexpr std::size_t kSumLength = 32;  // ContentHash::hex()
std::string entry_sum(const std::string& key, std::string_view content) {
  return ContentHash().add("metalcall cache entry 1").add(key).add(content).hex();
}
}  // namespace

std::optional<std::string> DiskCache::load_entry(const std::string& key, const std::string& extension) const {
  auto file = read_file(folder_ + "/" + key + extension);
  if (!file || file->size() < kSumLength) return std::nullopt;
  const std::size_t size = file->size() - kSumLength;
  if (file->compare(size, kSumLength, entry_sum(key, std::string_view(*file).substr(0, size))) != 0) return std::nullopt;
  file->resize(size);
  return file;
}

bool DiskCache::save_entry(const std::string& key, const std::string& extension, const std::string& content) const {
  if (!writable_) return false;
  return write_file_atomic(folder_ + "/" + key + extension, content + entry_sum(key, content));
}

}  // namespace metalcall
