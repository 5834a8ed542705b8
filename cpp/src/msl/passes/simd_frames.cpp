// Call frames for the CPU's SIMD-group rendezvous (see simd_frames.hpp).
#include "msl/passes/simd_frames.hpp"

#include <set>

#include "msl/analysis/call_graph.hpp"  // matching, declared_names
#include "msl/analysis/statements.hpp"  // kNone

namespace metalcall::msl {

FrameEdits simd_frame_edits(const std::vector<Token>& t, const SimdCallers& callers) {
  static const std::string kParameter =
      "metal::mtl_rt::simd_caller mtl_caller = metal::mtl_rt::simd_caller(__builtin_LINE())";
  // A function declared before its definition would need the parameter in both, the default once.
  const std::set<std::string> prototypes = declared_names(t).prototypes;
  FrameEdits out;
  for (const CallableBody& b : callers.bodies()) {
    if (!b.reaches || b.kernel || b.is_constexpr || (!b.name.empty() && b.intro == statements::kNone &&
                                                     prototypes.count(b.name)))
      continue;
    if (b.params == statements::kNone) {  // a lambda written `[…] {`
      out.after[b.intro] += "(" + kParameter + ")";
    } else {
      const std::size_t close = matching(t, b.params);
      if (close >= t.size()) continue;
      bool pack = false;
      for (std::size_t k = b.params + 1; k < close; ++k) pack = pack || t[k].is("...");
      const bool empty = close == b.params + 1;
      if (pack || (close == b.params + 2 && t[b.params + 1].is_identifier("void"))) continue;
      out.before[close] += (empty ? "" : ", ") + kParameter;
    }
    out.after[b.open] += " metal::mtl_rt::simd_frame mtl_frame(mtl_caller);";
  }
  return out;
}

}  // namespace metalcall::msl
