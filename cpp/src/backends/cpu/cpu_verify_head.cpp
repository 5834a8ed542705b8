// Precompiled heads for the translation verifier (see cpu_verify_head.hpp).
#include "backends/cpu/cpu_verify_head.hpp"

#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <sys/statvfs.h>

#include "backends/translated/embedded_prelude.hpp"
#include "core/cache_files.hpp"
#include "core/disk_cache.hpp"
#include "core/hash.hpp"
#include "core/scratch_space.hpp"

namespace metalcall::cpu {

namespace {

using Header = std::shared_ptr<const std::string>;

// By key; null: libclang made none, or refused the one it was given. A header is ~2.7 MB
// and the translator writes a few heads (its options), so a handful are kept.
std::mutex headers_mutex;
auto& headers = *new std::map<std::string, Header>();  // never destroyed (exit-safe statics)
constexpr std::size_t kHeadersKept = 8;

std::string head_key(const msl::VerifyInput& input, const std::string& head) {
  ContentHash key;
  key.add("translation verifier head 1").add(msl::libclang_identity()).add(head);
  key.add(translated::embedded_prelude_hash());  // input.prelude is the embedded prelude (cpu_verify.cpp)
  for (const auto& a : input.arguments) key.add(a);
  return key.hex();
}

// libclang ends the process when it cannot write a header out (LLVM's fatal "IO failure on
// output stream" on a full disk): one is made only in a folder with room for it many times
// over (~2.7 MB); elsewhere the whole unit is parsed, with the same verdict.
constexpr unsigned long long kHeaderRoom = 64ull << 20;

bool has_room_for_a_header(const std::string& folder) {
  struct statvfs st{};
  return statvfs(folder.c_str(), &st) == 0 && static_cast<unsigned long long>(st.f_bavail) * st.f_frsize >= kHeaderRoom;
}

// The header for `head`: this process's, the disk cache's (a damaged entry is a miss), or
// made now in `scratch` and stored. One maker at a time: the others wait for its header.
Header header_for(const msl::VerifyInput& input, const std::string& head, const std::string& key,
                  const std::string& scratch) {
  std::lock_guard<std::mutex> lock(headers_mutex);
  if (auto it = headers.find(key); it != headers.end()) return it->second;
  const DiskCache cache("verify");
  Header header;
  if (auto hit = cache.load_entry(key, ".pch")) {
    header = std::make_shared<const std::string>(std::move(*hit));
  } else {
    const std::string path = scratch + "/made.pch";
    std::string why;
    std::optional<std::string> made;
    if (has_room_for_a_header(scratch) && msl::precompile_head(input, head, path, &why)) made = read_file(path);
    std::remove(path.c_str());
    if (made) {
      cache.save_entry(key, ".pch", *made);
      header = std::make_shared<const std::string>(std::move(*made));
    }
  }
  if (headers.size() >= kHeadersKept) headers.clear();
  headers[key] = header;
  return header;
}

void forget(const std::string& key) {
  std::lock_guard<std::mutex> lock(headers_mutex);
  headers[key] = nullptr;
}

}  // namespace

msl::Verdict verify_with_head(msl::VerifyInput input) {
  const std::string head = msl::translation_head(input.code);
  if (head.empty()) return msl::verify_translation(input);
  const std::string key = head_key(input, head);
  msl::Verdict verdict;
  // Clang reads a precompiled header from a file: a copy in a private folder, removed after.
  in_scratch_folder(DiskCache("verify").temp_parent(), "[cpu]", [&](const std::string& folder, std::string&) {
    if (Header header = header_for(input, head, key, folder)) {
      const std::string path = folder + "/head.pch";
      if (write_file_atomic(path, *header)) input.head_pch = path;
    }
    verdict = msl::verify_translation(input);
    // Refused with no error in the unit: the header was the trouble; this process parses whole units.
    if (!input.head_pch.empty() && !verdict.used_head_pch && verdict.problems.empty()) forget(key);
    return true;
  });
  return verdict;
}

void prepare_head(const msl::VerifyInput& input) {
  const std::string head = msl::translation_head(input.code);
  if (head.empty()) return;
  const std::string key = head_key(input, head);
  {
    std::lock_guard<std::mutex> lock(headers_mutex);
    if (headers.count(key)) return;
  }
  in_scratch_folder(DiskCache("verify").temp_parent(), "[cpu]", [&](const std::string& folder, std::string&) {
    (void)header_for(input, head, key, folder);
    return true;
  });
}

}  // namespace metalcall::cpu
