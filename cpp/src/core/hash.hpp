// Content hashing for cache keys and disk-cache checksums: a fast 128-bit
// non-cryptographic hash in the style of XXH3 (eight 64-bit lanes fed 64 bytes
// at a time: a multiply of each keyed word's halves, plus the raw word added to
// the neighbouring lane so no input difference is lost), printed as hex. Collisions
// between honest inputs are what matters here, and 128 bits make them negligible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace metalcall {

namespace hash_detail {

inline std::uint64_t read64(const unsigned char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

/** The 128-bit product of a and b, folded to 64 bits (high xor low). */
inline std::uint64_t fold_multiply(std::uint64_t a, std::uint64_t b) {
#if defined(__SIZEOF_INT128__)
  __extension__ typedef unsigned __int128 u128;  // __extension__: not ISO C++, and the compiler knows it
  const u128 p = static_cast<u128>(a) * b;
  return static_cast<std::uint64_t>(p) ^ static_cast<std::uint64_t>(p >> 64);
#else
  const std::uint64_t a_lo = a & 0xffffffffu, a_hi = a >> 32, b_lo = b & 0xffffffffu, b_hi = b >> 32;
  const std::uint64_t ll = a_lo * b_lo, lh = a_lo * b_hi, hl = a_hi * b_lo, hh = a_hi * b_hi;
  const std::uint64_t mid = (ll >> 32) + (lh & 0xffffffffu) + (hl & 0xffffffffu);
  const std::uint64_t lo = (mid << 32) | (ll & 0xffffffffu);
  const std::uint64_t hi = hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
  return lo ^ hi;
#endif
}

inline std::uint64_t avalanche(std::uint64_t h) {
  h ^= h >> 37;
  h *= 0x165667919e3779f9ULL;
  h ^= h >> 32;
  return h;
}

// The key table: 32 odd words from splitmix64 (any well-spread values work).
struct KeyTable {
  std::uint64_t k[32] = {};
  constexpr KeyTable() {
    std::uint64_t x = 0;
    for (auto& v : k) {
      x += 0x9e3779b97f4a7c15ULL;
      std::uint64_t z = x;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      v = (z ^ (z >> 31)) | 1;
    }
  }
};
inline constexpr KeyTable kKeys{};
constexpr std::uint64_t kPrime32 = 0x9e3779b1ULL;
constexpr std::size_t kStripe = 64;         // bytes per step: eight 64-bit lanes
constexpr std::size_t kStripesPerBlock = 16;  // scrambled after each block of 1 KiB

/**
 * One stripe into the eight lanes. The key slides by one word per stripe, so
 * equal words in different stripes contribute differently (no reordering collides).
 * Written as a plain loop over lanes so the compiler vectorises it.
 */
inline void accumulate(std::uint64_t* __restrict acc, const unsigned char* __restrict p,
                       const std::uint64_t* __restrict key) {
  for (int i = 0; i < 8; ++i) {
    const std::uint64_t word = read64(p + 8 * i);
    const std::uint64_t keyed = word ^ key[i];
    acc[i ^ 1] += word;  // the invertible path: a changed word always changes a lane
    acc[i] += (keyed & 0xffffffffu) * (keyed >> 32);
  }
}

/** Stirs the lanes' high bits down, so sums over many stripes stay well mixed. */
inline void scramble(std::uint64_t* acc, const std::uint64_t* key) {
  for (int i = 0; i < 8; ++i) acc[i] = (acc[i] ^ (acc[i] >> 47) ^ key[i]) * kPrime32;
}

struct Digest {
  std::uint64_t lo, hi;
};

/** The 128-bit hash of `bytes`, seeded by an earlier digest (chaining pieces). */
inline Digest hash128(std::string_view bytes, Digest seed) {
  const std::uint64_t* key = kKeys.k;
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  std::size_t n = bytes.size();
  std::uint64_t acc[8];
  for (int i = 0; i < 8; ++i) acc[i] = key[16 + i] ^ ((i & 1) ? seed.hi : seed.lo);
  constexpr std::size_t block = kStripe * kStripesPerBlock;
  for (; n >= block; p += block, n -= block) {
    for (std::size_t s = 0; s < kStripesPerBlock; ++s) accumulate(acc, p + s * kStripe, key + s);
    scramble(acc, key + 24);
  }
  std::size_t s = 0;
  for (; n >= kStripe; p += kStripe, n -= kStripe, ++s) accumulate(acc, p + 0, key + s);
  // The tail, zero-padded, with its own key; the length below tells "ab" from "ab\0".
  unsigned char last[kStripe] = {};
  std::memcpy(last, p, n);
  accumulate(acc, last, key + 20);
  scramble(acc, key + 24);
  const std::uint64_t length = bytes.size();
  std::uint64_t lo = length * key[0], hi = ~length * key[1];
  for (int i = 0; i < 8; i += 2) {
    lo += fold_multiply(acc[i] ^ key[2 + i], acc[i + 1] ^ key[3 + i]);
    hi += fold_multiply(acc[i] ^ key[10 + i], acc[(i + 3) & 7] ^ key[11 + i]);
  }
  return {avalanche(lo), avalanche(hi)};
}

}  // namespace hash_detail

class ContentHash {
 public:
  /** Adds one piece; pieces are length-delimited, so ("ab","c") and ("a","bc") differ. */
  ContentHash& add(std::string_view bytes) {
    state_ = hash_detail::hash128(bytes, state_);
    return *this;
  }
  std::string hex() const {
    static const char digits[] = "0123456789abcdef";
    std::string out(32, '0');
    for (int i = 0; i < 16; ++i) {
      out[15 - i] = digits[(state_.lo >> (4 * i)) & 0xf];
      out[31 - i] = digits[(state_.hi >> (4 * i)) & 0xf];
    }
    return out;
  }

 private:
  hash_detail::Digest state_{0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL};
};

}  // namespace metalcall
