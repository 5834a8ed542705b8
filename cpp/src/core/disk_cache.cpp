// The on-disk cache (see disk_cache.hpp): where it lives, the checks of its folders,
// and the entry format (a header binding name, size and checksum to the content).
#include "core/disk_cache.hpp"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

#include "core/cache_eviction.hpp"
#include "core/hash.hpp"
#include "core/scratch_space.hpp"

namespace metalcall {

namespace {

// ---- the entry format ----
// magic (16 bytes) | format version (u32) | name length (u32) | content size (u64) |
// checksum of version, name and content (32 hex digits) | name | content.
// The name is "<area>/<key><extension>": an entry copied or renamed to another key,
// or a .so swapped in with another kernel's header, does not match and is a miss.
// The checksum detects damage and mix-ups, not forgery: keeping others from writing
// entries at all is the folder checks' job (a forger who can write here is this user).
constexpr char kMagic[16] = "metalcall cache";  // 15 characters and a NUL
constexpr std::uint32_t kFormatVersion = 1;
constexpr std::size_t kHeaderSize = 16 + 4 + 4 + 8 + 32;

void put(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
std::uint64_t get(const std::string& in, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in[at + i])) << (8 * i);
  return v;
}
std::string checksum(const std::string& name, std::string_view content) {
  return ChecksumHash().add("metalcall cache entry").add(std::to_string(kFormatVersion)).add(name).add(content).hex();
}

// ---- folder checks ----

void warn_once(const std::string& folder, const std::string& why) {
  static std::mutex mutex;
  static auto& warned = *new std::set<std::string>;
  std::lock_guard<std::mutex> lock(mutex);
  if (!warned.insert(folder).second) return;
  std::fprintf(stderr,
               "metalcall: warning: not using the cache folder %s: %s. Compiled kernels are not cached on disk; "
               "set METALCALL_CACHE_DIR to a folder of yours that others cannot write (chmod 700).\n",
               folder.c_str(), why.c_str());
}

}  // namespace

std::string encode_entry(const std::string& name, std::string_view content) {
  std::string out;
  out.reserve(kHeaderSize + name.size() + content.size());
  out.append(kMagic, sizeof kMagic);
  put(out, kFormatVersion, 4);
  put(out, name.size(), 4);
  put(out, content.size(), 8);
  out += checksum(name, content);
  out += name;
  out.append(content.data(), content.size());
  return out;
}

std::optional<std::string> decode_entry(const std::string& name, std::string file) {
  if (file.size() < kHeaderSize + name.size()) return std::nullopt;
  if (std::memcmp(file.data(), kMagic, sizeof kMagic) != 0 || get(file, 16, 4) != kFormatVersion) return std::nullopt;
  if (get(file, 20, 4) != name.size() || get(file, 24, 8) != file.size() - kHeaderSize - name.size()) return std::nullopt;
  if (file.compare(kHeaderSize, name.size(), name) != 0) return std::nullopt;
  const std::size_t start = kHeaderSize + name.size();
  const std::string_view content = std::string_view(file).substr(start);
  if (file.compare(32, 32, checksum(name, content)) != 0) return std::nullopt;
  file.erase(0, start);
  return file;
}

std::string default_cache_root() {
  if (const char* dir = std::getenv("METALCALL_CACHE_DIR"); dir && *dir) return dir;
  const char* home = std::getenv("HOME");
#ifdef __APPLE__
  if (home && *home) return std::string(home) + "/Library/Caches/metalcall";
#else
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/metalcall";
  if (home && *home) return std::string(home) + "/.cache/metalcall";
#endif
  // Shared /tmp: another user may have made this folder first. The owner check below
  // then refuses it (one warning, no disk cache) rather than trusting their files.
  return "/tmp/metalcall-cache-" + std::to_string(geteuid());
}

std::string check_cache_root(const std::string& root) {
  // Missing parents are made private too; a root that cannot be made is just no cache.
  if (!make_private_dirs(root)) return "it cannot be created";
  const std::string why = unsafe_folder_reason(root, /*follow_link=*/true);
  if (!why.empty()) warn_once(root, why);
  return why;
}

DiskCache::DiskCache(const std::string& area) : area_(area), root_(default_cache_root()) {
  folder_ = root_ + "/" + area;
  if (cache_size_limit() == 0) return;  // METALCALL_CACHE_SIZE=0: no disk cache
  if (!check_cache_root(root_).empty()) return;
  if (mkdir(folder_.c_str(), 0700) != 0 && errno != EEXIST) {  // a read-only root without this area
    if (errno == ENOSPC || errno == EDQUOT) {
      warn("[metalcall] the kernel cache folder " + folder_ + " cannot be made (" + std::strerror(errno) +
           "): nothing is cached until there is room");
    }
    return;
  }
  const std::string why = unsafe_folder_reason(folder_, /*follow_link=*/false);
  if (!why.empty()) {
    // Something that is not a folder (a file in its place) is simply no cache; a
    // link or another user's folder in our cache is worth telling.
    struct stat st;
    if (lstat(folder_.c_str(), &st) == 0 && (S_ISLNK(st.st_mode) || S_ISDIR(st.st_mode))) warn_once(folder_, why);
    return;
  }
  readable_ = true;
  writable_ = access(folder_.c_str(), W_OK) == 0;
}

std::optional<std::string> DiskCache::load_entry(const std::string& key, const std::string& extension) const {
  if (!readable_) return std::nullopt;
  const std::string name = area_ + "/" + key + extension;
  auto file = read_owned_file(folder_ + "/" + key + extension, largest_entry(), ReadAs::cache_entry);
  if (!file) return std::nullopt;
  return decode_entry(name, std::move(*file));
}

bool DiskCache::save_entry(const std::string& key, const std::string& extension, std::string_view content) const {
  if (!writable_) return false;
  const std::string entry = encode_entry(area_ + "/" + key + extension, content);
  if (entry.size() > largest_entry()) return false;
  if (!write_file_atomic(folder_ + "/" + key + extension, entry)) return false;
  cache_stored(root_, entry.size());
  return true;
}

std::string DiskCache::temp_parent() const { return writable_ ? folder_ : system_temp_folder(); }

std::optional<std::string> read_file(const std::string& path) {
  // O_NONBLOCK: a FIFO must not hang the process; only regular files are read.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return std::nullopt;
  }
  std::string out(st.st_size > 0 ? static_cast<std::size_t>(st.st_size) + 1 : 4096, '\0');
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

}  // namespace metalcall
