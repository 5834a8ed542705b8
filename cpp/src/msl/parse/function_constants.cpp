// Matching function-constant values to the constants a source declares, by name
// or index: the one matcher of every backend (Metal included); and the parameters
// that a false constant leaves out of a specialisation.
#include "msl/parse/function_constants.hpp"

#include <algorithm>

#include "metalcall/errors.hpp"

namespace metalcall::msl {

std::vector<std::size_t> match_constants(const std::vector<FunctionConstantInfo>& declared,
                                         const std::vector<FunctionConstant>& given) {
  std::vector<std::size_t> matches;
  for (const auto& g : given) {
    std::size_t match = declared.size();
    for (std::size_t i = 0; i < declared.size(); ++i)
      if (g.name.empty() ? declared[i].index == g.index : declared[i].name == g.name) match = i;
    if (match == declared.size()) {
      std::string names;
      for (const auto& c : declared)
        names += (names.empty() ? "" : ", ") + c.name + " (" + c.type_name + ", index " + std::to_string(c.index) + ")";
      throw ArgumentError("no function constant " +
                          (g.name.empty() ? "with index " + std::to_string(g.index) : "named '" + g.name + "'") +
                          "; the source declares: " + (names.empty() ? "none" : names));
    }
    if (std::find(matches.begin(), matches.end(), match) != matches.end()) {
      throw ArgumentError("function constant '" + declared[match].name + "' is given twice (by name and by index)");
    }
    matches.push_back(match);
  }
  return matches;
}

namespace {

bool is_true(const Argument& value) {
  switch (value.kind) {
    case Argument::Kind::boolean:
    case Argument::Kind::integer: return value.int_value != 0;
    case Argument::Kind::floating: return value.float_value != 0;
    default: return std::any_of(value.data.begin(), value.data.end(), [](std::uint8_t b) { return b != 0; });
  }
}

}  // namespace

void enable_params(KernelInfo& kernel, const std::vector<FunctionConstantInfo>& declared,
                   const std::vector<FunctionConstant>& given) {
  const std::vector<std::size_t> matches = match_constants(declared, given);
  for (ParamInfo& p : kernel.params) {
    if (p.function_constant.empty()) continue;
    auto decl = std::find_if(declared.begin(), declared.end(),
                             [&](const FunctionConstantInfo& c) { return c.name == p.function_constant; });
    if (decl == declared.end()) continue;  // computed from constants: unknown here, so required
    p.enabled = false;
    for (std::size_t i = 0; i < given.size(); ++i)
      if (matches[i] == static_cast<std::size_t>(decl - declared.begin())) p.enabled = is_true(given[i].value);
  }
}

}  // namespace metalcall::msl
