// CUDA: the edits that make SIMD-group functions act on the lanes MSL says they act on, where
// NVIDIA GPUs would not run those lanes together (docs/design.md, CUDA backend): lanes rejoined
// after divergent control flow, and loop exits kept in their iteration.
#include "msl/translate/translator_walk.hpp"

#include "msl/passes/simd_conditions.hpp"

namespace metalcall::msl {

void Translator::add_simd_lane_edits() {
  // Switches whose cases fall through into SIMD-group functions: guarded blocks instead, each
  // with one copy of its code, and the lanes rejoined between them (switch_fall_through.hpp).
  const SimdCallers simd_callers(t_, is_simd_call_name);
  const auto taken = [this](std::size_t i) { return rewritten(i); };
  const std::map<std::size_t, std::string> guarded =
      switch_fall_through_edits(t_, simd_callers, is_renamed_type, taken);
  for (const auto& [index, text] : guarded) active_edits_[index] = text;
  // Lanes rejoined before SIMD-group functions after divergent control flow: not inside what
  // another rewrite replaced (a loop nest handed over writes its own code). A switch written as
  // guarded blocks stays where it was: the lanes rejoin after it as after any switch (its last
  // block is run by part of them).
  const auto replaced = [&](std::size_t i) { return active_edits_.count(i) && !guarded.count(i); };
  for (const RejoinBlock& b : simd_rejoin_points(t_)) {
    if (active_edits_.count(b.open)) continue;
    const std::string lanes = "mtl_rejoin_" + std::to_string(b.open);
    bool used = false;
    // Before the next statement, not after the statement's last token: the loop stop checks
    // (added below, in front of that text) close the braces they wrap a loop's body in there.
    for (std::size_t end : b.after)
      if (!replaced(end) && end + 1 < t_.size()) {
        text_before_[end + 1] += " metal::mtl_rt::rejoin(" + lanes + ");";
        used = true;
      }
    if (used) text_after_[b.open] += " const unsigned " + lanes + " = metal::mtl_rt::branch_lanes();";
  }
  // Loop exits whose path may call a SIMD-group function stay in their iteration (CUDA, simd_loop_exits.hpp).
  for (const LoopExit& e : simd_loop_exits(t_, simd_callers))
    if (!active_edits_.count(e.first) && !active_edits_.count(e.last)) {
      if (!e.replace.empty()) active_edits_[e.first] = e.replace;
      if (!e.before.empty()) text_before_[e.first] += e.before;
      text_after_[e.last] += e.after;
    }
}

void Translator::join_simd_conditions(const std::function<bool(std::size_t, std::size_t)>& untouched) {
  const SimdCallers simd_callers(t_, is_simd_call_name);
  for (const auto& [first, last] : simd_joined_conditions(t_, simd_callers)) {
    // A unary minus that opens the condition may start a wrap of its own, inside or around it.
    if (t_[first].is("-") || !untouched(first, last + 1)) continue;
    // The wraps that start at its first token hold the whole conditional (a conversion of it, a
    // conditional's branch): the condition's opens after theirs. Its close after those of the
    // wraps that end with it, inside it.
    const std::string open = "metal::mtl_rt::joined_t{metal::mtl_rt::branch_lanes(), (";
    if (auto arm = conditional_arms_.before.find(first); arm != conditional_arms_.before.end())
      arm->second += open;
    else
      text_before_[first] += open;
    text_before_[last + 1] += ")}.value";
  }
}

}  // namespace metalcall::msl
