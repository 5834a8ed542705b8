// Loading a compiled kernel object from bytes (see kernel_object.hpp).
//
// Why a private copy: dlopen() needs a path, and a path can be swapped between a
// check and the load. The bytes here were read once through a checked descriptor
// (disk_cache) or produced by our own build; they are written to a new file in a
// new 0700 folder (mkdtemp) that only this user can enter, loaded, and the folder
// is removed at once (the mapping keeps the code; the file's name is gone). Loading
// through /proc/self/fd/N of a sealed memfd was the alternative, but glibc matches
// already-loaded objects by name, and fd numbers are reused: a second kernel loaded
// through the same number would get the first one's handle. Unique file names here
// avoid that, and the same code works on macOS.
#include "backends/cpu/kernel_object.hpp"
#include "backends/cpu/object_check.hpp"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <dlfcn.h>

#include "core/cache_files.hpp"
#include "core/disk_cache.hpp"
#include "core/scratch_space.hpp"
#include "metalcall/errors.hpp"

namespace metalcall::cpu {

void* load_kernel_object(const std::string& bytes) {
  // Inside the cache folder when it is writable (a filesystem where code may be mapped:
  // /tmp is sometimes noexec), else $TMPDIR; then wherever there is room, and where code
  // may be mapped (scratch_space.hpp).
  void* handle = nullptr;
  in_scratch_folder(DiskCache("cpu").temp_parent(), "[cpu]", [&](const std::string& temp, std::string& why) {
    // A name never used before in this process: glibc returns an already-loaded object of the same name.
    static std::atomic<unsigned long> loads{0};
    const std::string path = temp + "/kernel-" + std::to_string(loads.fetch_add(1)) + ".so";
    errno = 0;
    if (!write_file_atomic(path, bytes)) {
      why = errno ? std::strerror(errno) : "cannot write there";
      return false;
    }
    // dlopen runs an object's initialisers: the object is checked first (object_check.hpp),
    // on exactly the bytes dlopen maps next, built here or found in the disk cache alike.
    check_kernel_object(path);
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* error = dlerror();
      why = error ? error : "dlopen failed";
      // A folder where code cannot be mapped (noexec): try the next one.
      if (why.find("failed to map segment") != std::string::npos || why.find("not permitted") != std::string::npos)
        return false;
      throw DeviceError("[cpu] cannot load the compiled kernel: " + why);
    }
    return true;  // the file and its folder go now; the mapping stays
  });
  return handle;
}

}  // namespace metalcall::cpu
