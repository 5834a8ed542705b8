// Hashing for caches. ContentHash names cache entries (an in-memory library, a translation, a
// kernel object): SHA-256, since the hashed sources come from whoever writes kernels, and a
// collision they construct would make the caches serve one source's code for another.
// ChecksumHash detects damage in a disk-cache entry whose name already binds it to its key:
// a fast 128-bit non-cryptographic hash in the style of XXH3 (eight 64-bit lanes fed 64 bytes
// at a time: a multiply of each keyed word's halves, plus the raw word added to the
// neighbouring lane so no input difference is lost), printed as hex. It is no key: with its
// key table public, colliding inputs are easy to write (a word whose low half equals its
// key's adds only itself to a lane: two such words trade their high halves unseen), which
// made two sources differing in one byte of a comment share every cache entry before
// 2026-12-05 (tests/security/test_attack_audit.py).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "core/sha256.hpp"

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

/** A fast checksum (not collision resistant: see above), 32 hex digits. */
class ChecksumHash {
 public:
  /** Adds one piece; pieces are length-delimited, so ("ab","c") and ("a","bc") differ. */
  ChecksumHash& add(std::string_view bytes) {
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

/** A cache key: SHA-256 of the length-delimited pieces, 64 hex digits (kKeyDigits). */
class ContentHash {
 public:
  /** Adds one piece; pieces are length-delimited, so ("ab","c") and ("a","bc") differ. */
  ContentHash& add(std::string_view bytes) {
    unsigned char length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(std::uint64_t(bytes.size()) >> (8 * i));
    sha_.update(std::string_view(reinterpret_cast<const char*>(length), 8));
    sha_.update(bytes);
    return *this;
  }
  std::string hex() const {
    static const char digits[] = "0123456789abcdef";
    sha256_detail::Sha256 copy = sha_;
    unsigned char digest[32];
    copy.finish(digest);
    std::string out(64, '0');
    for (int i = 0; i < 32; ++i) {
      out[2 * i] = digits[digest[i] >> 4];
      out[2 * i + 1] = digits[digest[i] & 0xf];
    }
    return out;
  }

 private:
  sha256_detail::Sha256 sha_;
};

/** The hex digits of a cache key (ContentHash); entries named with 32 are an older format's. */
inline constexpr std::size_t kKeyDigits = 64;

}  // namespace metalcall
