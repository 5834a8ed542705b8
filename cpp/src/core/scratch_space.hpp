// Where a build puts its temporary files (its source, the MSL headers, the compiler's
// output, the object it loads) when the cache's folder cannot take them: a full disk, a
// quota, a file-size limit. The compile then goes on elsewhere, with a warning, and is an
// error only when no folder has room (docs/design.md, "Caches").
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace metalcall {

/** Folders a build may use, best first: `preferred` (the cache's), $TMPDIR or /tmp, /dev/shm, /var/tmp;
 *  existing directories, each once. */
std::vector<std::string> scratch_parents(const std::string& preferred);

/**
 * Runs `attempt(folder, why)` in a new private folder (removed afterwards) inside each of
 * scratch_parents(preferred) in turn, until it returns true; false means that folder could
 * not take its files, and `why` says so ("No space left on device"). A success after the
 * first folder failed gives one warning per failed folder and process (metalcall/warnings.hpp);
 * when every folder failed, throws DeviceError naming each and why, prefixed by `scope`
 * ("[cpu]"). Errors `attempt` throws (a CompileError) pass through.
 */
void in_scratch_folder(const std::string& preferred, const std::string& scope,
                       const std::function<bool(const std::string& folder, std::string& why)>& attempt);

/** What a tool's output says about a folder that took no more files ("No space left on device"), or "". */
std::string full_folder_sign(const std::string& output);

/** Queues a warning for the embedder (metalcall/warnings.hpp); a message given before is dropped. */
void warn(const std::string& message);

}  // namespace metalcall
