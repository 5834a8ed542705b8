# The Metal simulator, Device("metal-sim"): executes the Metal backend's plans under Metal's
# documented rules and runs the kernels on a CPU device. Needs the CPU backend (always built)
# and the Metal plan (metal_plan.cmake).
set(_metal_sim_dir "${CMAKE_CURRENT_LIST_DIR}")
list(APPEND METALCALL_BACKEND_SOURCES
  ${_metal_sim_dir}/sim_device.cpp
  ${_metal_sim_dir}/sim_dispatch.cpp
  ${_metal_sim_dir}/sim_driver.cpp
  ${_metal_sim_dir}/sim_families.cpp
  ${_metal_sim_dir}/sim_faults.cpp
)
