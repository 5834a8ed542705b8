// The bounds on one compile (see compile_limits.hpp).
#include "core/compile_limits.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "metalcall/errors.hpp"

namespace metalcall {

namespace {

constexpr std::uint64_t kMiB = std::uint64_t(1) << 20;

// The variable's value as a non-negative number, or `fallback` when unset; 0 means no limit.
double from_environment(const char* variable, double fallback) {
  const char* text = std::getenv(variable);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text, &end);
  if (errno != 0 || *end != '\0' || !(value >= 0) || std::isinf(value)) {
    throw CompileError(std::string(variable) + "='" + text + "' is not a number of " +
                       (std::string(variable) == "METALCALL_COMPILE_TIMEOUT" ? "seconds" : "bytes") +
                       " (0 lifts the limit)");
  }
  return value;
}

std::string size_text(std::uint64_t bytes) {
  if (bytes >= kMiB && bytes % kMiB == 0) return std::to_string(bytes / kMiB) + " MiB";
  return std::to_string(bytes) + " bytes";
}

}  // namespace

CompileLimits CompileLimits::current() {
  CompileLimits limits;
  limits.source_bytes = static_cast<std::uint64_t>(from_environment("METALCALL_MAX_SOURCE_BYTES", 16.0 * kMiB));
  limits.preprocessed_bytes =
      static_cast<std::uint64_t>(from_environment("METALCALL_MAX_PREPROCESSED_BYTES", 32.0 * kMiB));
  limits.compiler_seconds = from_environment("METALCALL_COMPILE_TIMEOUT", 300);
  limits.compiler_memory = static_cast<std::uint64_t>(from_environment("METALCALL_COMPILER_MEMORY", 8192.0 * kMiB));
  return limits;
}

std::string describe_limit(std::uint64_t bytes, const char* variable) {
  return "the limit of " + size_text(bytes) + " (" + variable + ")";
}

void check_source_size(const std::string& source) {
  const std::uint64_t limit = CompileLimits::current().source_bytes;
  if (limit == 0 || source.size() <= limit) return;
  throw CompileError("the source is " + size_text(source.size()) + ", over " +
                     describe_limit(limit, "METALCALL_MAX_SOURCE_BYTES") +
                     "; split it into several libraries, or raise the limit");
}

}  // namespace metalcall
