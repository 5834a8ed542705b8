// The front end's acceptance rules: a source must be MSL, not host C++. Run by
// msl::translate before translation, so that nothing the MSL specification leaves
// out (inline assembly, host library calls, static constructors...) reaches the
// target's compiler. docs/msl-rules.md lists each rule with its source in the spec.
#pragma once

#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/**
 * Throws CompileError at the first construct of `tokens` (the user's tokens, after
 * preprocessing when there was any) that MSL does not have; its message ends with
 * "[MSL rule: ...]". `source` is the user's text, for the error's line. `checked`: the
 * source is for checked mode, which refuses what could take its pointers apart.
 */
void check_msl_rules(const std::vector<Token>& tokens, const std::string& source, bool checked = false);

/** The compiler builtins (`__builtin_clz`, ...) MSL sources may call: Apple's clang and the host compiler have them. */
bool is_allowed_builtin(const std::string& id);

/** Metal's argument-table limits (Metal feature set tables): the largest index of each. */
constexpr int kMaxBufferIndex = 30;       // 31 buffer entries
constexpr int kMaxThreadgroupIndex = 30;  // 31 threadgroup memory entries
constexpr int kMaxTextureIndex = 127;     // 128 texture entries (macOS; 31 on older iOS GPUs)
constexpr int kMaxSamplerIndex = 15;      // 16 sampler entries

}  // namespace metalcall::msl
