// The Metal backend's plain C++ logic: everything that needs no GPU, so it is tested
// off a Mac (tools/metal_check/logic_test.cpp).
#include "backends/metal/metal_backend.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "core/scalar_packing.hpp"
#include "metalcall/errors.hpp"
#include "msl/errors/diagnostics.hpp"
#include "msl/parse/function_constants.hpp"
#include "msl/translate/translator.hpp"

namespace metalcall::metal {

std::pair<int, int> parse_language_version(const std::string& text) {
  const bool shaped = text.size() == 3 && text[0] >= '1' && text[0] <= '9' && text[1] == '.' &&
                      text[2] >= '0' && text[2] <= '9';
  if (!shaped)
    throw CompileError("[metal] unknown Metal language version '" + text +
                       "': give it as major.minor, e.g. \"3.1\", or leave it empty for the newest");
  return {text[0] - '0', text[2] - '0'};
}

int metal_version_macro(std::uint64_t language_version) {
  return static_cast<int>((language_version >> 16) * 100 + (language_version & 0xffff) * 10);
}

std::vector<msl::Diagnostic> parse_compile_log(const std::string& log) {
  std::vector<msl::Diagnostic> diagnostics;
  std::size_t start = 0;
  while (start < log.size()) {
    std::size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    msl::Diagnostic d;
    if (msl::parse_clang_style_line(log.substr(start, end - start), d)) {
      // Metal names the source it was given "program_source".
      if (d.file == "program_source") d.file = msl::kSourceName;
      diagnostics.push_back(std::move(d));
    }
    start = end + 1;
  }
  return diagnostics;
}

CompileError compile_error_from_log(const std::string& log, const std::string& source, const std::string& what_failed) {
  return msl::compile_error(parse_compile_log(log), nullptr, source, log, what_failed);
}

std::vector<std::size_t> device_order(const std::vector<GpuTraits>& gpus) {
  std::vector<std::size_t> order;
  auto first_where = [&](auto&& wanted) {
    for (std::size_t i = 0; i < gpus.size(); ++i)
      if (wanted(gpus[i])) return i;
    return gpus.size();
  };
  // The built-in high-power GPU, as MTLCreateSystemDefaultDevice picks it; else any built-in one.
  std::size_t preferred = first_where([](const GpuTraits& g) { return !g.removable && !g.low_power; });
  if (preferred == gpus.size()) preferred = first_where([](const GpuTraits& g) { return !g.removable; });
  if (preferred == gpus.size() && !gpus.empty()) preferred = 0;
  if (preferred < gpus.size()) order.push_back(preferred);
  for (std::size_t i = 0; i < gpus.size(); ++i)
    if (i != preferred) order.push_back(i);
  return order;
}

Specialisation specialisation(const std::string& kernel, std::vector<FunctionConstantSlot> used,
                              const std::vector<FunctionConstantSlot>& declared, const std::vector<FunctionConstant>& given) {
  const std::vector<FunctionConstantSlot> known = known_constants(std::move(used), declared);
  std::vector<msl::FunctionConstantInfo> infos;
  for (const FunctionConstantSlot& k : known)
    infos.push_back({k.name, static_cast<int>(k.index), k.scalar, k.type_name, k.width});
  return specialisation(kernel, known, given, msl::match_constants(infos, given));
}

}  // namespace metalcall::metal
