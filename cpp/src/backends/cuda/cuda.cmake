# The CUDA backend: NVRTC and the driver API, both loaded with dlopen at run time,
# so it builds with no CUDA toolkit and needs no CUDA header. It shares the CPU
# backend's embedded MSL prelude and its host preprocessor.
set(_cuda_dir "${CMAKE_CURRENT_LIST_DIR}")
list(APPEND METALCALL_BACKEND_SOURCES
  ${_cuda_dir}/cuda_api.cpp
  ${_cuda_dir}/cuda_device.cpp
)
