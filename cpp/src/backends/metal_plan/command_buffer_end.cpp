// The texts of a failed command buffer (command_buffer_end.hpp).
#include "backends/metal_plan/command_buffer_end.hpp"

namespace metalcall::metal {

std::string gpu_failure_text(const std::vector<DispatchCommand>& commands, const std::string& description,
                             GpuFailure failure, const std::string& scope) {
  std::string kernels = "kernel";
  if (!commands.empty() && commands.front().program) {
    kernels += " '" + commands.front().program->info().name + "'";
    if (commands.size() > 1)
      kernels += " (or one of the " + std::to_string(commands.size() - 1) + " other calls of its batch)";
  }
  std::string text = scope + " the GPU failed while running " + kernels + ": " + description;
  switch (failure) {
    case GpuFailure::page_fault:
    case GpuFailure::invalid_resource:
      text += ". An access out of bounds is the usual cause: run the same call on "
              "mc.Device(\"cpu\", checked=True) to find it";
      break;
    case GpuFailure::timeout:
      text += ". The kernel ran longer than the GPU allows: split the grid over several calls";
      break;
    case GpuFailure::out_of_memory:
      text += ". The GPU ran out of memory: free buffers you no longer need, or use smaller ones";
      break;
    case GpuFailure::not_permitted:
    case GpuFailure::device_removed:
      // A device stays open for the whole process: opening it again gives the same one.
      text += ". The GPU is no longer available to this process: restart the process, or use mc.Device(\"cpu\")";
      break;
    case GpuFailure::other:
      break;
  }
  return text;
}

std::string unable_to_start_text(const std::string& what, const std::string& device, const std::string& scope) {
  return scope + " unable to start a " + what + " on " + device +
         ": the GPU may have been reset or removed; restart the process, or use mc.Device(\"cpu\")";
}

}  // namespace metalcall::metal
