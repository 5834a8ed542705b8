#include "core/disk_cache.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
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
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return s.str();
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
    char pattern[] = "/tmp/metalcall-XXXXXX";
    const char* made = mkdtemp(pattern);
    scratch_ = made ? made : "/tmp";
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

}  // namespace metalcall
