// Content hashing for cache keys: 128-bit FNV-1a (two lanes with different
// offsets), printed as hex. Not cryptographic; collisions between honest inputs
// are what matters here, and 128 bits make them negligible.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace metalcall {

class ContentHash {
 public:
  ContentHash& add(std::string_view bytes) {
    for (unsigned char c : bytes) {
      a_ = (a_ ^ c) * kPrime;
      b_ = (b_ ^ c) * kPrime;
      b_ ^= b_ >> 29;
    }
    // Length and a separator so that ("ab","c") and ("a","bc") differ.
    const std::uint64_t n = bytes.size();
    for (int i = 0; i < 8; ++i) {
      a_ = (a_ ^ ((n >> (8 * i)) & 0xff)) * kPrime;
      b_ = (b_ ^ ((n >> (8 * i)) & 0xff)) * kPrime;
    }
    return *this;
  }
  std::string hex() const {
    char out[33];
    std::snprintf(out, sizeof out, "%016llx%016llx", static_cast<unsigned long long>(a_),
                  static_cast<unsigned long long>(b_));
    return out;
  }

 private:
  static constexpr std::uint64_t kPrime = 0x100000001b3ULL;
  std::uint64_t a_ = 0xcbf29ce484222325ULL;
  std::uint64_t b_ = 0x84222325cbf29ce4ULL;
};

}  // namespace metalcall
