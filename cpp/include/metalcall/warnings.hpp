// Warnings metalcall has for whoever embeds it: things that went wrong without failing
// (a full cache folder: the compile used a temporary folder instead). The Python module
// turns them into metalcall.CacheWarning after the calls that may produce them.
#pragma once

#include <string>
#include <vector>

namespace metalcall {

/** The warnings given since the last call, oldest first; each distinct one once per process. */
std::vector<std::string> take_warnings();

}  // namespace metalcall
