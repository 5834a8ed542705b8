// Starting the sandbox worker executable (sandbox_worker.cpp) and finding it.
#pragma once

#include <string>
#include <sys/types.h>

namespace metalcall::cpu::sandbox {

/** The worker executable: $METALCALL_SANDBOX_WORKER, else beside the library; "" if none. */
std::string worker_executable();

/**
 * Starts the worker with `socket`, `control` and `arena` on the descriptors of
 * sandbox_protocol.hpp, /dev/null for the standard ones, an empty environment, no
 * blocked signals and default handlers. Started from a thread that lives as long as
 * the process, so that the worker's parent-death signal fires only when the process
 * ends. Throws DeviceError.
 */
pid_t spawn_worker(const std::string& executable, int socket, int control, int arena);

}  // namespace metalcall::cpu::sandbox
