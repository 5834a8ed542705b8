# The CUDA backend: NVRTC and the driver API, both loaded with dlopen at run time,
# so it builds with no CUDA toolkit and needs no CUDA header. Uses the translated
# wing (translated.cmake) for the MSL front end, the prelude and the preprocessor.
set(_cuda_dir "${CMAKE_CURRENT_LIST_DIR}")
list(APPEND METALCALL_BACKEND_SOURCES
  ${_cuda_dir}/cuda_api.cpp
  ${_cuda_dir}/cuda_compiler.cpp
  ${_cuda_dir}/cuda_device.cpp
  ${_cuda_dir}/cuda_enqueue.cpp
  ${_cuda_dir}/cuda_host_staging.cpp
  ${_cuda_dir}/cuda_queue.cpp
  ${_cuda_dir}/cuda_stop.cpp
)
