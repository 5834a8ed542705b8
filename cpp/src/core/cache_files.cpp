// The disk cache's careful file primitives (see cache_files.hpp).
#include "core/cache_files.hpp"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace metalcall {

namespace {

std::string check_directory_stat(const struct stat& st) {
  if (!S_ISDIR(st.st_mode)) return "it is not a directory";
  if (st.st_uid != geteuid()) return "it is owned by another user (uid " + std::to_string(st.st_uid) + ")";
  if (st.st_mode & (S_IWGRP | S_IWOTH)) return "other users may write to it (mode " + [&] {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%03o", static_cast<unsigned>(st.st_mode & 0777));
      return std::string(mode);
    }() + ")";
  return "";
}

void remove_tree_at(int parent_fd, const char* name) {
  // A file, a link or an empty folder goes at once; a link is removed, never followed.
  if (unlinkat(parent_fd, name, 0) == 0 || errno == ENOENT) return;
  const int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  DIR* dir = fdopendir(fd);
  if (!dir) {
    close(fd);
    return;
  }
  std::vector<std::string> names;
  while (const dirent* e = readdir(dir)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  for (const auto& n : names) remove_tree_at(dirfd(dir), n.c_str());
  closedir(dir);
  unlinkat(parent_fd, name, AT_REMOVEDIR);
}

}  // namespace

std::string unsafe_folder_reason(const std::string& path, bool follow_link) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return "it cannot be examined";
  if (S_ISLNK(st.st_mode)) {
    if (!follow_link) return "it is a symbolic link";
    if (st.st_uid != geteuid()) return "it is a symbolic link owned by another user (uid " + std::to_string(st.st_uid) + ")";
    if (stat(path.c_str(), &st) != 0) return "it is a dangling symbolic link";
  }
  return check_directory_stat(st);
}

bool make_private_dirs(const std::string& path) {
  for (std::size_t i = 1; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      const std::string partial = path.substr(0, i);
      if (mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) return false;
    }
  }
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::optional<std::string> read_owned_file(const std::string& path, std::uint64_t max_bytes, ReadAs as) {
  const bool entry = as == ReadAs::cache_entry;
  // O_NOFOLLOW: never through a planted link (to /dev/zero, to another user's file).
  // O_NONBLOCK: opening a planted FIFO returns at once; fstat then refuses it.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY);
  if (fd < 0) return std::nullopt;
  struct stat st;
  const bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
                  (!entry || (st.st_mode & (S_IWGRP | S_IWOTH)) == 0) &&
                  static_cast<std::uint64_t>(st.st_size) <= max_bytes;
  if (!ok) {
    close(fd);
    return std::nullopt;
  }
  // One byte more than the size, so the read that finds the end needs no larger buffer.
  std::string out(static_cast<std::size_t>(st.st_size) + 1, '\0');
  std::size_t used = 0;
  for (;;) {
    if (used == out.size()) {
      // The file grew while being read: someone else is writing it; not ours to trust.
      close(fd);
      return std::nullopt;
    }
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
  if (entry) {
    // The access time only: the modification time says when the entry was written.
    const struct timespec times[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
    futimens(fd, times);
  }
  close(fd);
  out.resize(used);
  return out;
}

bool write_file_atomic(const std::string& path, std::string_view content) {
  static std::atomic<unsigned> counter{0};
  const std::string temp = path + "." + std::to_string(getpid()) + "." + std::to_string(counter.fetch_add(1)) + ".tmp";
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  std::size_t done = 0;
  bool ok = true;
  while (ok && done < content.size()) {
    const ssize_t n = write(fd, content.data() + done, content.size() - done);
    if (n > 0) done += static_cast<std::size_t>(n);
    else if (!(n < 0 && errno == EINTR)) ok = false;
  }
  ok = close(fd) == 0 && ok;
  if (!ok || std::rename(temp.c_str(), path.c_str()) != 0) {
    unlink(temp.c_str());
    return false;
  }
  return true;
}

void remove_tree(const std::string& path) {
  if (!path.empty()) remove_tree_at(AT_FDCWD, path.c_str());
}

std::string system_temp_folder() {
  const char* dir = std::getenv("TMPDIR");
  if (dir && dir[0] == '/') return dir;
  return "/tmp";
}

PrivateTempDir::PrivateTempDir(const std::string& parent) {
  std::string pattern = parent + "/" + kTempDirPrefix + "XXXXXX";
  if (mkdtemp(&pattern[0])) path_ = pattern;  // mkdtemp: a new folder, mode 0700
}

PrivateTempDir::~PrivateTempDir() { remove_tree(path_); }

}  // namespace metalcall
