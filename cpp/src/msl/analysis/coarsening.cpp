#include "msl/analysis/coarsening.hpp"

#include <string>

#include "msl/analysis/sync_reachability.hpp"

namespace metalcall::msl {

namespace {

constexpr std::size_t kCoarsenableTokens = 1500;

bool is_loop_name(const std::string& name) { return name == "for" || name == "while" || name == "do"; }

bool is_precise_trig_name(const std::string& name) {
  return name == "sin" || name == "cos" || name == "tan" || name == "sincos";
}

// Whether the source names sin, cos, tan or sincos other than as fast::NAME (precise:: is precise).
bool names_precise_trig(const std::vector<Token>& t) {
  for (std::size_t i = 0; i < t.size(); ++i)
    if (t[i].kind == TokenKind::identifier && is_precise_trig_name(t[i].text) &&
        !(i >= 2 && t[i - 1].is("::") && t[i - 2].is_identifier("fast")))
      return true;
  return false;
}

}  // namespace

std::vector<bool> straight_line_kernels(const std::vector<Token>& t, const std::vector<ParsedKernel>& kernels,
                                        bool loop_free) {
  std::vector<bool> out(kernels.size(), false);
  if (t.size() > kCoarsenableTokens) return out;
  const std::vector<bool> none(kernels.size(), false);
  const std::vector<bool> loops = loop_free ? none : kernels_reaching(t, kernels, is_loop_name);
  const std::vector<bool> storage =
      kernels_reaching(t, kernels, [](const std::string& name) { return name == "threadgroup"; });
  // fast::sin named too counts where the source also names a precise one: by name only.
  const std::vector<bool> trig = names_precise_trig(t) ? kernels_reaching(t, kernels, is_precise_trig_name) : none;
  for (std::size_t i = 0; i < kernels.size(); ++i) out[i] = !loops[i] && !storage[i] && !trig[i];
  return out;
}

}  // namespace metalcall::msl
