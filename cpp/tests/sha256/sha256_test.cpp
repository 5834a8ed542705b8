// Reads lines "HEX-MESSAGE CHUNK" and prints each message's SHA-256 (core/sha256.hpp), fed to
// update() CHUNK bytes at a time; run.sh compares the digests with Python's hashlib.
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

#include "core/sha256.hpp"

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream fields(line);
    std::string hex;
    std::size_t chunk = 1;
    fields >> hex >> chunk;
    if (hex == "-") hex.clear();
    std::string message;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2) message += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
    metalcall::sha256_detail::Sha256 sha;
    for (std::size_t i = 0; i < message.size(); i += chunk) sha.update(std::string_view(message).substr(i, chunk));
    unsigned char digest[32];
    sha.finish(digest);
    for (unsigned char c : digest) std::printf("%02x", c);
    std::printf("\n");
  }
  return 0;
}
