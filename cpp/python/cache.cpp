// metalcall's disk cache as Python sees it: _core.cache_info() and _core.cache_clear(),
// behind `python -m metalcall cache info|clear`.
#include "bindings.hpp"

namespace metalcall::python {

void init_cache(py::module_& m) {
  m.def("cache_info", [] {
    const DiskCacheInfo info = disk_cache_info();
    py::dict out;
    out["directory"] = info.directory;
    out["enabled"] = info.enabled;
    out["problem"] = info.problem;
    out["entries"] = info.entries;
    out["bytes"] = info.bytes;
    out["limit"] = info.limit == ~std::uint64_t(0) ? py::object(py::none()) : py::object(py::int_(info.limit));
    return out;
  }, "The disk cache: {'directory', 'enabled', 'problem', 'entries', 'bytes', 'limit' (None: no limit)}.");
  m.def("cache_clear", [] { return clear_disk_cache(); },
        "Removes metalcall's entries from the disk cache; returns how many it removed.");
}

}  // namespace metalcall::python
