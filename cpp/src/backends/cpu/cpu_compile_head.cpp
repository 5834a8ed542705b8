// Precompiled heads for the CPU backend's clang builds (see cpu_compile_head.hpp).
#include "backends/cpu/cpu_compile_head.hpp"

#include <cstdio>
#include <map>
#include <memory>
#include <mutex>

#include "core/cache_files.hpp"
#include "core/disk_cache.hpp"
#include "core/hash.hpp"

namespace metalcall::cpu {

namespace {

using Header = std::shared_ptr<const std::string>;

// By key; null: clang made none, or a build with it failed. The translator writes a few heads
// and builds use a few flag sets, so a handful are kept.
std::mutex headers_mutex;
auto& headers = *new std::map<std::string, Header>();  // never destroyed (exit-safe statics)
constexpr std::size_t kHeadersKept = 8;

std::string header_key(const std::string& head, const HeadCompiler& compiler) {
  ContentHash key;
  key.add("cpu compile head 1").add(compiler.identity).add(head);
  for (const auto& c : compiler.command) key.add(c);
  for (const auto& f : compiler.flags) key.add(f);
  return key.hex();
}

// Clang's precompiled header of `head`, made in `folder`; nullopt when it made none.
std::optional<std::string> make_header(const std::string& folder, const std::string& prelude, const std::string& head,
                                       const HeadCompiler& compiler) {
  const std::string head_path = folder + "/head.h", header_path = folder + "/head.pch";
  if (!write_file_atomic(head_path, head)) return std::nullopt;
  std::vector<std::string> argv = compiler.command;
  for (const auto& f : compiler.flags)
    if (f != "-shared") argv.push_back(f);
  // The prelude's text goes into the header: a build reads none of its files.
  argv.insert(argv.end(), {"-I", prelude, "-Xclang", "-fmodules-embed-all-files", "-x", "c++-header", head_path, "-o",
                           header_path});
  const translated::ProcessResult made = translated::run_process(argv, compiler.limits, {{"TMPDIR", folder}});
  std::optional<std::string> header;
  if (made.exit_code == 0) header = read_file(header_path);
  std::remove(head_path.c_str());
  std::remove(header_path.c_str());
  return header;
}

}  // namespace

std::string head_header_in(const std::string& folder, const std::string& prelude, const std::string& head,
                           const HeadCompiler& compiler) {
  const std::string key = header_key(head, compiler);
  Header header;
  {
    // One maker at a time: the others wait for its header.
    std::lock_guard<std::mutex> lock(headers_mutex);
    if (auto it = headers.find(key); it != headers.end()) {
      header = it->second;
    } else {
      const DiskCache cache("cpu");
      if (auto hit = cache.load_entry(key, ".pch")) {
        header = std::make_shared<const std::string>(std::move(*hit));
      } else if (auto made = make_header(folder, prelude, head, compiler)) {
        cache.save_entry(key, ".pch", *made);  // nothing happens when the cache is read-only or full
        header = std::make_shared<const std::string>(std::move(*made));
      }
      if (headers.size() >= kHeadersKept) headers.clear();
      headers[key] = header;
    }
  }
  if (!header) return {};
  const std::string path = folder + "/head.pch";
  return write_file_atomic(path, *header) ? path : std::string();
}

void forget_head_header(const std::string& head, const HeadCompiler& compiler) {
  std::lock_guard<std::mutex> lock(headers_mutex);
  headers[header_key(head, compiler)] = nullptr;
}

}  // namespace metalcall::cpu
