// check_stack_usage: see stack_limits.hpp.
#include "backends/cpu/stack_limits.hpp"

#include <cxxabi.h>

#include <cctype>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "metalcall/errors.hpp"
#include "msl/checked/checked_mode.hpp"
#include "msl/targets/cpu_abi.hpp"
#include "msl/lex/lexer.hpp"
#include "msl/errors/source_errors.hpp"

namespace metalcall::cpu {

namespace {

struct Frame {
  std::string file;  // "source.metal" for the user's functions
  int line = 0;
  std::string function;
  unsigned long long bytes = 0;
  bool unbounded = false;  // "dynamic" without "bounded": a variable-length array or alloca
};

// Lines like "source.metal:12:6:void helper(float*)\t4128\tstatic" (g++) or
// "source.metal:12:_Z6helperPf\t4128\tstatic" (clang: no column, mangled names).
std::vector<Frame> parse(const std::string& usage) {
  std::vector<Frame> frames;
  std::istringstream in(usage);
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t tab1 = line.find('\t');
    const std::size_t tab2 = tab1 == std::string::npos ? tab1 : line.find('\t', tab1 + 1);
    if (tab2 == std::string::npos) continue;
    const std::string where = line.substr(0, tab1);
    Frame f;
    f.bytes = std::strtoull(line.c_str() + tab1 + 1, nullptr, 10);
    const std::string kind = line.substr(tab2 + 1);
    f.unbounded = kind.find("dynamic") != std::string::npos && kind.find("bounded") == std::string::npos;
    const std::size_t c1 = where.find(':');
    const std::size_t c2 = c1 == std::string::npos ? c1 : where.find(':', c1 + 1);
    if (c2 == std::string::npos) {
      f.function = where;
    } else {
      f.file = where.substr(0, c1);
      f.line = std::atoi(where.c_str() + c1 + 1);
      std::size_t name = c2 + 1;
      const std::size_t c3 = where.find(':', name);
      if (c3 != std::string::npos && c3 > name &&
          where.find_first_not_of("0123456789", name) == c3)  // a column
        name = c3 + 1;
      f.function = where.substr(name);
    }
    frames.push_back(std::move(f));
  }
  return frames;
}

bool names(const Frame& f, const std::string& symbol) {
  // "metalcall_entry_0" (extern "C") or "void metalcall_thread_0(void*, unsigned int)".
  // or, mangled by clang, "_ZL18metalcall_thread_0Pvj": not followed by a digit.
  for (std::size_t at = f.function.find(symbol); at != std::string::npos; at = f.function.find(symbol, at + 1)) {
    const std::size_t end = at + symbol.size();
    if (end == f.function.size() || !std::isdigit(static_cast<unsigned char>(f.function[end]))) return true;
  }
  return false;
}

bool is_thread_body(const Frame& f) {
  return f.function.find("metalcall_entry_") != std::string::npos ||
         f.function.find("metalcall_thread_") != std::string::npos;
}

// "helper(unsigned int)" for clang's "_Z6helperj"; g++'s names are readable already.
std::string readable(const std::string& name) {
  if (name.rfind("_Z", 0) != 0) return name;
  int status = 0;
  char* plain = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  std::string out = status == 0 && plain ? plain : name;
  std::free(plain);
  return out;
}

// The private arrays the source declares ("'tmp' (line 5)"), for the message; the
// compiler reports frames, not arrays. Empty when the source does not tokenize.
std::string private_arrays(const std::string& source) {
  std::string names;
  try {
    const std::vector<msl::Token> t = msl::tokenize(source);
    int listed = 0;
    for (const auto& [first, a] : msl::find_checked_arrays(t)) {
      (void)first;
      if (a.kind != 1) continue;
      if (listed++ == 4) {
        names += ", …";
        break;
      }
      names += std::string(names.empty() ? "" : ", ") + "'" + t[a.name].text + "' (line " +
               std::to_string(t[a.name].line) + ")";
    }
  } catch (const std::exception&) {
  }
  return names;
}

std::string kib(unsigned long long bytes) { return std::to_string((bytes + 1023) / 1024) + " KiB"; }

}  // namespace

void check_stack_usage(const std::string& usage, const msl::Translation& tr, const std::string& source) {
  if (usage.empty()) return;
  const std::vector<Frame> frames = parse(usage);
  for (const Frame& f : frames) {
    if (f.unbounded && f.file == msl::kSourceName) {
      throw CompileError("[cpu] '" + readable(f.function) + "' allocates stack memory of a size known only at run time (a variable-length "
                         "array): MSL arrays have a constant size",
                         "", f.line, 0, msl::source_line(source, f.line));
    }
  }
  unsigned long long helpers = 0;  // functions that any kernel might call
  const Frame* largest_helper = nullptr;
  for (const Frame& f : frames) {
    if (is_thread_body(f)) continue;
    helpers += f.bytes;
    if (!largest_helper || f.bytes > largest_helper->bytes) largest_helper = &f;
  }
  for (std::size_t i = 0; i < tr.kernels.size(); ++i) {
    const auto& k = tr.kernels[i];
    // A fiber kernel's threads run metalcall_thread_i on their fiber stacks; a loop
    // kernel's run inside metalcall_entry_i on the worker thread.
    const std::string body_symbol = k.uses_fibers ? "metalcall_thread_" + std::to_string(i) : msl::cpu_entry_symbol(i);
    const Frame* body = nullptr;
    for (const Frame& f : frames)
      if (names(f, body_symbol)) body = &f;
    const unsigned long long need = (body ? body->bytes : 0) + helpers;
    const unsigned long long limit = k.uses_fibers ? kFiberStackBytes - kFiberStackReserve : kLoopStackBytes;
    if (need <= limit) continue;
    const bool in_helper = largest_helper && (!body || largest_helper->bytes > body->bytes);
    std::string where = "mostly in the kernel and what is inlined into it";
    int line = 0;
    if (in_helper && largest_helper->file == msl::kSourceName) {
      where = "most in '" + readable(largest_helper->function) + "'";
      line = largest_helper->line;
    }
    std::string message =
        "[cpu] kernel '" + k.info.name + "' needs about " + kib(need) +
        " of stack per thread for its private arrays and locals (" + where + "), over the cpu backend's limit of " +
        kib(limit) +
        (k.uses_fibers ? " for kernels that use barriers or SIMD-group functions (each thread runs on its own "
                         "fiber stack)"
                       : " per worker thread") +
        ": make the private arrays smaller, or keep large data in device or threadgroup memory";
    const std::string arrays = private_arrays(source);
    if (!arrays.empty()) message += " (private arrays in this source: " + arrays + ")";
    throw CompileError(message, "", line, 0, line ? msl::source_line(source, line) : std::string());
  }
}

}  // namespace metalcall::cpu
