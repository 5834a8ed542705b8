// The independent check of the CPU backend's translation (docs/security.md, "The
// translation verifier"): every cold CPU compile parses the translated C++ with libclang
// and verifies it before the object the host compiler built is kept or loaded. On by
// default wherever libclang loads; METALCALL_VERIFY=0 turns it off, METALCALL_VERIFY=1
// requires it. These entry points expose it for tests and tools.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace metalcall {

/** True when cold CPU compiles verify: METALCALL_VERIFY=1 (required), =0 (off), unset: wherever libclang loads. */
bool translation_verification_requested();

/** The C++ the CPU backend compiles for MSL `source` (all kernels, default options but `defines`). Throws CompileError. */
std::string cpu_translation_text(const std::string& source, bool checked = false,
                                 const std::vector<std::pair<std::string, std::string>>& defines = {});

/**
 * Verifies `code`, a translation for the CPU backend, as a cold compile does: the
 * problems found, each with its place (empty: verified). Throws DeviceError when
 * libclang cannot be loaded (the message says how to install it).
 */
std::vector<std::string> verify_cpu_translation(const std::string& code);

struct TranslationCheck {
  std::vector<std::string> problems;
  bool used_precompiled_head = false;  // the verdict came from a parse that read a precompiled head
};

/**
 * verify_cpu_translation, saying whether a precompiled header of the unit's head was read:
 * `precompiled_head` false parses the whole unit; `head_pch` names a header file to give
 * libclang instead of the one the cache holds (tests).
 */
TranslationCheck verify_cpu_translation_details(const std::string& code, bool precompiled_head,
                                                const std::string& head_pch = "");

/** verify_cpu_translation as a cold compile uses it: throws CompileError naming the problems. */
void check_cpu_translation(const std::string& code);

/** The libclang library the check loads: its path, or why none loads. */
std::string translation_verifier_library(bool* found);

/** Where the `libclang` wheel's library is, tried after METALCALL_LIBCLANG (the Python package sets it). */
void set_wheel_libclang_path(const std::string& path);

}  // namespace metalcall
