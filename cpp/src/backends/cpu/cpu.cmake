# The CPU backend: always built. Uses the translated wing (translated.cmake).
enable_language(ASM)
set(_cpu_dir "${CMAKE_CURRENT_LIST_DIR}")
list(APPEND METALCALL_BACKEND_SOURCES
  ${_cpu_dir}/cpu_compiler.cpp
  ${_cpu_dir}/cpu_device.cpp
  ${_cpu_dir}/cpu_dispatch.cpp
  ${_cpu_dir}/cpu_queue.cpp
  ${_cpu_dir}/fiber.cpp
  ${_cpu_dir}/kernel_object.cpp
  ${_cpu_dir}/fork_guard.cpp
  ${_cpu_dir}/stack_limits.cpp
  ${_cpu_dir}/fiber_switch_x86_64.S
  ${_cpu_dir}/fiber_switch_arm64.S
  ${_cpu_dir}/object_check.cpp
  ${_cpu_dir}/object_check_elf.cpp
  ${_cpu_dir}/object_check_macho.cpp
  ${_cpu_dir}/worker_pool.cpp
  ${_cpu_dir}/worker_state.cpp
)
