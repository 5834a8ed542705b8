// The front end's result kept on disk, so a new process compiling a source it has
// seen skips tokenizing, parsing and translating it (most of a warm compile's time).
// One small self-checking entry per source and options; a bad entry is a miss.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "msl/translate/front_end.hpp"

namespace metalcall::translated {

class TranslationCache {
 public:
  /**
   * The entry for `source` translated with `options`. Keyed by all that determines
   * the translation: target, checked mode, source, defines, constant values, the
   * preprocessor's identity where the source needs one, the prelude and the metalcall binary itself (so a
   * rebuilt translator never reads an old entry).
   */
  TranslationCache(const std::string& source, const msl::FrontEndOptions& options);

  /** The cached translation (its source map empty: only a failed build needs it); nullopt on a miss. */
  std::optional<msl::Translation> load() const;
  /** Stores `translation` (code, kernels and constants); nothing happens when the cache is read-only. */
  void save(const msl::Translation& translation) const;

 private:
  std::string key_;  // empty: this process cannot key entries safely, so none are used
};

/** The entry's bytes: a versioned little-endian format written field by field. */
std::string serialize_translation(const msl::Translation& translation);
/** The translation in `bytes`, or nullopt when they are truncated, foreign or out of range. */
std::optional<msl::Translation> deserialize_translation(std::string_view bytes);

}  // namespace metalcall::translated
