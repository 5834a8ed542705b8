# The Metal plan: what the Metal backend decides, in plain C++, shared by the Objective-C++
# driver (metal.cmake, on macOS) and the Metal simulator (metal_sim.cmake, everywhere).
set(_metal_plan_dir "${CMAKE_CURRENT_LIST_DIR}")
list(APPEND METALCALL_BACKEND_SOURCES
  ${_metal_plan_dir}/command_buffer_end.cpp
  ${_metal_plan_dir}/device_rules.cpp
  ${_metal_plan_dir}/function_constants.cpp
  ${_metal_plan_dir}/library_reflection.cpp
  ${_metal_plan_dir}/metal_resources.cpp
  ${_metal_plan_dir}/plan.cpp
  ${_metal_plan_dir}/planner.cpp
)
