// The translation verifier's precompiled headers (msl/verify/translation_verifier.hpp,
// VerifyInput::head_pch) for the CPU backend: Clang parses the prelude once per head
// (the translator's part of a unit ahead of the user's code), not once per compile. A
// header is kept by this process and in the disk cache's "verify" area, under a key of
// the libclang that made it, the head, the prelude and the arguments.
#pragma once

#include <string>

#include "msl/verify/translation_verifier.hpp"

namespace metalcall::cpu {

/**
 * Verifies `input` (head_pch unset) with the precompiled header of its head: this
 * process's, the disk cache's, or one made now and stored. Without a head, or when no
 * header can be made or written, the whole unit is parsed: the verdict is the same.
 */
msl::Verdict verify_with_head(msl::VerifyInput input);

/**
 * Finds or makes the precompiled header of `input`'s head, as verify_with_head would, so that
 * a verification after it finds one: called beside a build, whose compile then overlaps the
 * header's making. Nothing where the process has the header already; any trouble is left for
 * the verification to meet.
 */
void prepare_head(const msl::VerifyInput& input);

}  // namespace metalcall::cpu
