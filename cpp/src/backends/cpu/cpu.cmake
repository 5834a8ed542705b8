# The CPU backend: always built. Uses the translated wing (translated.cmake).
enable_language(ASM)
set(_cpu_dir "${CMAKE_CURRENT_LIST_DIR}")
list(APPEND METALCALL_BACKEND_SOURCES
  ${_cpu_dir}/cpu_compiler.cpp
  ${_cpu_dir}/cpu_device.cpp
  ${_cpu_dir}/cpu_dispatch.cpp
  ${_cpu_dir}/dispatch_clock.cpp
  ${_cpu_dir}/cpu_queue.cpp
  ${_cpu_dir}/cpu_verify.cpp
  ${_cpu_dir}/cpu_compile_head.cpp
  ${_cpu_dir}/cpu_verify_head.cpp
  ${_cpu_dir}/fiber.cpp
  ${_cpu_dir}/kernel_object.cpp
  ${_cpu_dir}/kernel_stop.cpp
  ${_cpu_dir}/fork_guard.cpp
  ${_cpu_dir}/stack_limits.cpp
  ${_cpu_dir}/stack_guard.cpp
  ${_cpu_dir}/fiber_switch_x86_64.S
  ${_cpu_dir}/fiber_switch_arm64.S
  ${_cpu_dir}/object_check.cpp
  ${_cpu_dir}/object_check_elf.cpp
  ${_cpu_dir}/object_check_macho.cpp
  ${_cpu_dir}/wait_word.cpp
  ${_cpu_dir}/worker_pool.cpp
  ${_cpu_dir}/worker_state.cpp
)

# The sandboxed CPU device (Device("cpu", sandbox=True)): Linux only (seccomp, memfd).
# Its worker is an executable of its own, built from the CPU runtime's dispatch code and
# installed beside the library (the Python package's folder, or bin/ of a C++ install),
# where sandbox/worker_spawn.cpp looks for it.
if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
  list(APPEND METALCALL_BACKEND_SOURCES
    ${_cpu_dir}/sandbox/sandbox_calls.cpp
    ${_cpu_dir}/sandbox/sandbox_device.cpp
    ${_cpu_dir}/sandbox/sandbox_programs.cpp
    ${_cpu_dir}/sandbox/sandbox_staging.cpp
    ${_cpu_dir}/sandbox/shared_arena.cpp
    ${_cpu_dir}/sandbox/worker_link.cpp
    ${_cpu_dir}/sandbox/worker_spawn.cpp
  )
  add_executable(metalcall-sandbox-worker
    ${_cpu_dir}/sandbox/sandbox_worker.cpp
    ${_cpu_dir}/sandbox/sandbox_filter.cpp
    ${_cpu_dir}/cpu_dispatch.cpp
    ${_cpu_dir}/dispatch_clock.cpp
    ${_cpu_dir}/fiber.cpp
    ${_cpu_dir}/fiber_switch_x86_64.S
    ${_cpu_dir}/fiber_switch_arm64.S
    ${_cpu_dir}/fork_guard.cpp
    ${_cpu_dir}/kernel_stop.cpp
    ${_cpu_dir}/stack_guard.cpp
    ${_cpu_dir}/wait_word.cpp
    ${_cpu_dir}/worker_pool.cpp
    ${_cpu_dir}/worker_state.cpp
    ${CMAKE_CURRENT_SOURCE_DIR}/cpp/src/core/interrupt.cpp
    ${CMAKE_CURRENT_SOURCE_DIR}/cpp/src/core/poison.cpp
  )
  target_include_directories(metalcall-sandbox-worker PRIVATE
    ${CMAKE_CURRENT_SOURCE_DIR}/cpp/src ${CMAKE_CURRENT_SOURCE_DIR}/cpp/include
    ${CMAKE_CURRENT_BINARY_DIR}/generated/include)
  find_package(Threads REQUIRED)
  target_link_libraries(metalcall-sandbox-worker PRIVATE Threads::Threads ${CMAKE_DL_LIBS} m)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(metalcall-sandbox-worker PRIVATE -Wall -Wextra)
  endif()
  if(SKBUILD)
    install(TARGETS metalcall-sandbox-worker RUNTIME DESTINATION metalcall)
  else()
    include(GNUInstallDirs)
    install(TARGETS metalcall-sandbox-worker RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
  endif()
else()
  list(APPEND METALCALL_BACKEND_SOURCES ${_cpu_dir}/sandbox/sandbox_unsupported.cpp)
endif()
