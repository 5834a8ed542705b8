// The SourceMap: where a column of the translation came from in the user's line, so that a
// target compiler's error points at the user's source.
#include <algorithm>
#include <utility>

#include "msl/translate/translator.hpp"

namespace metalcall::msl {

void SourceMap::add(int line, int out_column, int user_column) {
  auto& v = lines_[line];
  if (!v.empty() && v.back().first >= out_column) return;  // keep it sorted; first token wins
  v.emplace_back(out_column, user_column);
}

int SourceMap::user_column(int line, int out_column) const {
  auto it = lines_.find(line);
  if (it == lines_.end() || it->second.empty()) return out_column;
  const auto& v = it->second;
  auto pos = std::upper_bound(v.begin(), v.end(), std::make_pair(out_column, 1 << 30));
  if (pos == v.begin()) return v.front().second;
  --pos;
  return pos->second + (out_column - pos->first);
}

}  // namespace metalcall::msl
