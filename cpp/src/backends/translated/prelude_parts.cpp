// Which prelude parts a translated kernel needs (see prelude_parts.hpp): each part's declared
// names, read from the prelude's headers at build time (prelude_part_tables.hpp), against the
// words of the kernel's code.
#include "backends/translated/prelude_parts.hpp"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <unordered_set>

#include "backends/translated/prelude_part_list.hpp"
#include "backends/translated/prelude_part_tables.hpp"
#include "backends/translated/prelude_words.hpp"

namespace metalcall::translated {

namespace {

// The table covers every embedded header and lists the parts of parts_table() in its order
// (else the whole prelude is used).
bool usable() {
  static const bool ok = [] {
    const auto& parts = parts_table();
    bool same = part_table::kComplete && part_table::kPartCount == parts.size();
    for (std::size_t p = 0; same && p < parts.size(); ++p) same = std::strcmp(part_table::kParts[p].part, parts[p].name) == 0;
    return same;
  }();
  return ok;
}

bool matches(const std::string_view w, const part_table::PartTable& t) {
  const char* const* end = t.names + t.name_count;
  const char* const* it =
      std::lower_bound(t.names, end, w, [](const char* name, std::string_view word) { return std::string_view(name) < word; });
  if (it != end && std::string_view(*it) == w) return true;
  for (std::size_t i = 0; i < t.pasted_count; ++i) {
    const std::string_view prefix = t.pasted[i][0], suffix = t.pasted[i][1];
    // The pasted argument is a type or function name of 3 characters or more (int, half, sin):
    // mtl_p2, a translation's parameter, is no vector type.
    if (w.size() >= prefix.size() + suffix.size() + 3 && w.compare(0, prefix.size(), prefix) == 0 &&
        w.compare(w.size() - suffix.size(), suffix.size(), suffix) == 0)
      return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> prelude_parts(const std::string& code) {
  const auto& parts = parts_table();
  std::vector<std::string> out;
  if (!usable()) return out;
  // Every word of the code, those of its directives too (a defines= value may call sin), but
  // not the names the code defines itself (#define METALCALL_SGM_ELEMENTS 0).
  std::unordered_set<std::string_view> words;
  for (std::string_view w : tokens(code)) {
    if (is_identifier(w)) {
      words.insert(w);
    } else if (w[0] == '#') {
      std::size_t k = 1;
      while (k < w.size() && !word_start(w[k])) ++k;
      std::size_t e = k;
      while (e < w.size() && word_char(w[e])) ++e;
      const bool define = w.substr(k, e - k) == "define";
      const std::vector<std::string_view> inner = tokens(w.substr(e));
      for (std::size_t j = define ? 1 : 0; j < inner.size(); ++j)
        if (is_identifier(inner[j])) words.insert(inner[j]);
    }
  }
  std::vector<bool> in(parts.size(), false);
  for (std::string_view w : words) {
    for (std::size_t p = 0; p < parts.size(); ++p) in[p] = in[p] || matches(w, part_table::kParts[p]);
  }
  // The parts needed by those in (the table lists a part after those it needs).
  for (std::size_t p = parts.size(); p-- > 0;) {
    if (!in[p]) continue;
    for (const char* need : parts[p].needs)
      for (std::size_t q = 0; q < p; ++q) in[q] = in[q] || std::strcmp(parts[q].name, need) == 0;
  }
  for (std::size_t p = 0; p < parts.size(); ++p)
    if (in[p]) out.push_back(parts[p].name);
  return out;
}

std::vector<std::string> prelude_part_options(const std::string& code) {
  std::vector<std::string> out;
  if (!usable()) return out;
  out.push_back("-DMETALCALL_PRELUDE_PARTS=1");
  for (const std::string& p : prelude_parts(code)) out.push_back("-DMETALCALL_PART_" + p + "=1");
  return out;
}

}  // namespace metalcall::translated
