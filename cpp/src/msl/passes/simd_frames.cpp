// Call frames for the CPU's SIMD-group rendezvous (see simd_frames.hpp).
#include "msl/passes/simd_frames.hpp"

#include <set>

#include "msl/analysis/call_graph.hpp"  // matching, declared_names
#include "msl/analysis/statements.hpp"  // kNone

namespace metalcall::msl {

namespace {

// Whether the name at j is called there: `name(`, `name<…>(`. Anything else (a template
// argument, decltype(name<…>), &name) uses the function's type, which the parameter would change.
bool called_at(const std::vector<Token>& t, std::size_t j) {
  std::size_t k = j + 1;
  if (k < t.size() && t[k].is("<")) {
    int depth = 0;
    for (; k < t.size(); ++k) {
      if (t[k].is("<")) ++depth;
      else if (t[k].is(">")) --depth;
      else if (t[k].is(">>")) depth -= 2;
      else if (t[k].is(";") || t[k].is("{") || t[k].is("}")) return false;
      if (depth <= 0) break;
    }
    ++k;
  }
  return k < t.size() && t[k].is("(");
}

}  // namespace

FrameEdits simd_frame_edits(const std::vector<Token>& t, const SimdCallers& callers) {
  static const std::string& kParameter = *new std::string(
      "metal::mtl_rt::simd_caller mtl_caller = metal::mtl_rt::simd_caller(__builtin_LINE())");  // never destroyed (tests/reliability/test_exit_safe_statics.py)
  static const std::string& kUndefaulted = *new std::string("metal::mtl_rt::simd_caller mtl_caller");
  // A function declared before its definition would need the parameter in both, the default once.
  std::set<std::string> kept_as_written = declared_names(t).prototypes;
  // Functions whose name stands for their type or address somewhere (ggml's `template<disp_t
  // fn> void mmv_fn(…)` given `kernel_mul_mv_t_t_disp<half, half, …>`) keep their signature.
  std::set<std::string> functions;
  for (const CallableBody& b : callers.bodies())
    if (b.reaches && b.intro == statements::kNone && !b.name.empty()) functions.insert(b.name);
  for (std::size_t j = 0; j < t.size(); ++j)
    if (t[j].kind == TokenKind::identifier && functions.count(t[j].text) && !called_at(t, j) &&
        !(j > 0 && (t[j - 1].is(".") || t[j - 1].is("->"))))
      kept_as_written.insert(t[j].text);
  // A body that reaches none takes the parameter too where another body of its name does: an
  // explicit specialisation or an out-of-class definition must match its class's declaration
  // (MLX's FFT: `template <> void ReadWriter<float, float2>::write() const thread` beside the
  // class's `write()`, which reaches a barrier). The parameter's default keeps the calls as written.
  std::set<std::string> reaching;
  for (const CallableBody& b : callers.bodies())
    if (b.reaches && !b.kernel && !b.is_constexpr && !b.name.empty()) reaching.insert(b.name);
  FrameEdits out;
  std::set<std::string> left;  // names of a body that keeps its signature
  std::set<std::string> functors_left;  // structs with an operator() that keeps its signature
  for (std::size_t i = 0; i < callers.bodies().size(); ++i) {
    const CallableBody& b = callers.bodies()[i];
    const std::string& functor = callers.functor_of(i);
    const bool shares_a_name = !b.name.empty() && b.intro == statements::kNone && reaching.count(b.name);
    if ((!b.reaches && !shares_a_name) || b.kernel || b.is_constexpr ||
        (!b.name.empty() && b.intro == statements::kNone && kept_as_written.count(b.name))) {
      left.insert(b.name);
      if (!functor.empty()) functors_left.insert(functor);
      continue;
    }
    if (b.params == statements::kNone) {  // a lambda written `[…] {`
      out.after[b.intro] += "(" + kParameter + ")";
    } else {
      const std::size_t close = matching(t, b.params);
      bool pack = false;
      for (std::size_t k = b.params + 1; k < close && close < t.size(); ++k) pack = pack || t[k].is("...");
      if (close >= t.size() || pack || (close == b.params + 2 && t[b.params + 1].is_identifier("void"))) {
        left.insert(b.name);
        if (!functor.empty()) functors_left.insert(functor);
        continue;
      }
      // (An out-of-class definition takes the default from its class's declaration, and may not repeat it.)
      const bool out_of_class = b.params >= 2 && t[b.params - 2].is("::");
      out.before[close] += (close == b.params + 1 ? "" : ", ") + (out_of_class ? kUndefaulted : kParameter);
    }
    out.after[b.open] += " metal::mtl_rt::simd_frame mtl_frame(mtl_caller);";
    if (!b.name.empty()) out.framed.insert(b.name);
    if (!functor.empty()) out.framed_functors.insert(functor);
  }
  for (const std::string& name : left) out.framed.erase(name);
  for (const std::string& name : functors_left) out.framed_functors.erase(name);
  return out;
}

}  // namespace metalcall::msl
