// Precompiled heads for the CPU backend's clang builds (see cpu_compile_head.hpp).
#include "backends/cpu/cpu_compile_head.hpp"

#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

#include "core/cache_files.hpp"
#include "core/disk_cache.hpp"
#include "core/hash.hpp"

namespace metalcall::cpu {

namespace {

using Header = std::shared_ptr<const std::string>;

// By key: the header (null: clang made none, or a build with it failed), or being made. The
// translator writes a few heads and builds use a few flag sets, so a handful are kept.
struct Known {
  Header header;
  bool making = false;
};
std::mutex headers_mutex;
auto& headers = *new std::map<std::string, Known>();  // never destroyed (exit-safe statics)
constexpr std::size_t kHeadersKept = 8;

std::string header_key(const std::string& head, const HeadCompiler& compiler) {
  ContentHash key;
  key.add("cpu compile head 1").add(compiler.identity).add(head);
  for (const auto& c : compiler.command) key.add(c);
  for (const auto& f : compiler.flags) key.add(f);
  return key.hex();
}

void remember(const std::string& key, Header header) {
  std::lock_guard<std::mutex> lock(headers_mutex);
  if (headers.size() >= kHeadersKept)
    for (auto it = headers.begin(); it != headers.end();) it = it->second.making ? std::next(it) : headers.erase(it);
  headers[key] = Known{std::move(header), false};
}

// Clang's precompiled header of `head`, made in `folder` (created, then removed); nullopt when it made none.
std::optional<std::string> make_header(const std::string& folder, const std::string& prelude, const std::string& head,
                                       const HeadCompiler& compiler) {
  if (mkdir(folder.c_str(), 0700) != 0) return std::nullopt;
  const std::string head_path = folder + "/head.h", header_path = folder + "/head.pch";
  std::optional<std::string> header;
  if (write_file_atomic(head_path, head)) {
    std::vector<std::string> argv = compiler.command;
    for (const auto& f : compiler.flags)
      if (f != "-shared") argv.push_back(f);
    // The prelude's text goes into the header: a build reads none of its files.
    argv.insert(argv.end(), {"-I", prelude, "-Xclang", "-fmodules-embed-all-files", "-x", "c++-header", head_path,
                             "-o", header_path});
    if (translated::run_process(argv, compiler.limits, {{"TMPDIR", folder}}).exit_code == 0)
      header = read_file(header_path);
  }
  std::remove(head_path.c_str());
  std::remove(header_path.c_str());
  rmdir(folder.c_str());
  return header;
}

}  // namespace

HeadHeader::HeadHeader(const std::string& folder, const std::string& prelude, const std::string& head,
                       const HeadCompiler& compiler)
    : key_(header_key(head, compiler)) {
  Header header;
  bool make = false;
  {
    std::lock_guard<std::mutex> lock(headers_mutex);
    if (auto it = headers.find(key_); it != headers.end()) {
      header = it->second.header;  // null while another build makes it: this one compiles whole
    } else if (auto hit = DiskCache("cpu").load_entry(key_, ".pch")) {
      header = std::make_shared<const std::string>(std::move(*hit));
      headers[key_] = Known{header, false};
    } else {
      headers[key_] = Known{nullptr, true};
      make = true;
    }
  }
  if (make) {
    try {
      maker_ = std::thread([key = key_, made_in = folder + "/head", prelude, head, compiler] {
        Header made;
        if (auto text = make_header(made_in, prelude, head, compiler)) {
          DiskCache("cpu").save_entry(key, ".pch", *text);  // nothing happens when the cache is read-only or full
          made = std::make_shared<const std::string>(std::move(*text));
        }
        remember(key, std::move(made));
      });
    } catch (const std::system_error&) {  // no thread to be had: this process compiles that head whole
      remember(key_, nullptr);
    }
    return;
  }
  if (header && write_file_atomic(folder + "/head.pch", *header)) path_ = folder + "/head.pch";
}

HeadHeader::~HeadHeader() {
  if (maker_.joinable()) maker_.join();
}

void HeadHeader::failed() {
  path_.clear();
  remember(key_, nullptr);
}

}  // namespace metalcall::cpu
