// The disk cache's size limit (METALCALL_CACHE_SIZE, default 1 GiB) and its least-
// recently-used eviction, safe with many processes sharing one folder: one evicts at
// a time (flock on the folder's lock file), and readers never need a file to stay,
// since an entry is read whole through one descriptor and loaded from that copy.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace metalcall {

inline constexpr std::uint64_t kNoCacheLimit = ~std::uint64_t(0);

/** The limit in bytes from METALCALL_CACHE_SIZE: 1 GiB by default, 0: the disk cache is off, kNoCacheLimit: none. */
std::uint64_t cache_size_limit();

/** "1073741824", "500M", "2G", "1.5GiB", "64k", "0", "unlimited"; nullopt when it is none of these. */
std::optional<std::uint64_t> parse_cache_size(const std::string& text);

/** The most bytes one entry may have: the limit, at most 4 GiB (a bigger file is never read). */
std::uint64_t largest_entry();

/** Records an entry of `bytes` written under `root`; evicts least recently used entries when due. */
void cache_stored(const std::string& root, std::uint64_t bytes);

}  // namespace metalcall
