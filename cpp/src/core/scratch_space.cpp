// Folders with room for a build's files, and the warnings for the embedder (see scratch_space.hpp).
#include "core/scratch_space.hpp"

#include <sys/stat.h>

#include <mutex>
#include <set>

#include "core/cache_files.hpp"
#include "metalcall/errors.hpp"
#include "metalcall/warnings.hpp"

namespace metalcall {

namespace {

struct Warnings {
  std::mutex mutex;
  std::set<std::string> given;
  std::vector<std::string> pending;
};

// Never destroyed: a daemon thread may compile while exit() runs destructors.
Warnings& warnings() {
  static Warnings* w = new Warnings;
  return *w;
}

bool is_directory(const std::string& path) {
  struct stat st;
  return !path.empty() && stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

void warn(const std::string& message) {
  Warnings& w = warnings();
  std::lock_guard<std::mutex> lock(w.mutex);
  if (w.given.insert(message).second) w.pending.push_back(message);
}

std::vector<std::string> take_warnings() {
  Warnings& w = warnings();
  std::lock_guard<std::mutex> lock(w.mutex);
  std::vector<std::string> out;
  out.swap(w.pending);
  return out;
}

std::vector<std::string> scratch_parents(const std::string& preferred) {
  std::vector<std::string> out;
  for (const std::string& folder : {preferred, system_temp_folder(), std::string("/dev/shm"), std::string("/var/tmp")}) {
    bool seen = false;
    for (const auto& f : out) seen = seen || f == folder;
    if (!seen && is_directory(folder)) out.push_back(folder);
  }
  return out;
}

std::string full_folder_sign(const std::string& output) {
  for (const char* sign : {"No space left on device", "Disk quota exceeded", "File too large", "Read-only file system"}) {
    if (output.find(sign) != std::string::npos) return sign;
  }
  return "";
}

void in_scratch_folder(const std::string& preferred, const std::string& scope,
                       const std::function<bool(const std::string& folder, std::string& why)>& attempt) {
  std::vector<std::pair<std::string, std::string>> failed;  // folder, why
  for (const std::string& parent : scratch_parents(preferred)) {
    std::string why;
    bool done = false;
    {
      const PrivateTempDir temp(parent);
      if (temp.path().empty()) why = "cannot create a folder in it";
      else done = attempt(temp.path(), why);
    }
    if (done) {
      for (const auto& [folder, reason] : failed) {
        warn(scope + " " + folder + " has no room for a build's files (" + reason + "): compiled in " + parent +
             " instead; the kernel cache stays as it was until there is room");
      }
      return;
    }
    failed.emplace_back(parent, why.empty() ? "cannot write there" : why);
  }
  std::string where;
  for (const auto& [folder, reason] : failed) where += (where.empty() ? "" : ", ") + folder + " (" + reason + ")";
  throw DeviceError(scope + " no folder has room for a build's files: " + (where.empty() ? "none found" : where) +
                    "; free some space, or set METALCALL_CACHE_DIR (or TMPDIR) to a folder with room");
}

}  // namespace metalcall
