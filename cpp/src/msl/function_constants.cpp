// Matching function-constant values to the constants a source declares, by name
// or index: the one matcher of every backend (Metal included).
#include "msl/function_constants.hpp"

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

}  // namespace metalcall::msl
