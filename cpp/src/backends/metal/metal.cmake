# The Metal backend: Objective-C++ (ARC) over Metal.framework. The top-level
# CMakeLists.txt includes this when APPLE AND METALCALL_METAL.
enable_language(OBJCXX)
set(CMAKE_OBJCXX_STANDARD 17)
set(CMAKE_OBJCXX_STANDARD_REQUIRED ON)

# MTLBinding reflection and MTLLanguageVersion3_0 are macOS 13; newer APIs sit behind @available.
if(CMAKE_OSX_DEPLOYMENT_TARGET AND CMAKE_OSX_DEPLOYMENT_TARGET VERSION_LESS 13.0)
  message(FATAL_ERROR "The Metal backend needs macOS 13 or newer, but CMAKE_OSX_DEPLOYMENT_TARGET is "
                      "${CMAKE_OSX_DEPLOYMENT_TARGET}: set it (or MACOSX_DEPLOYMENT_TARGET) to 13.0 or later, "
                      "or build without it (-DMETALCALL_METAL=OFF)")
endif()

set(_metal_dir "${CMAKE_CURRENT_LIST_DIR}")
set(_metal_objcxx_sources
  ${_metal_dir}/metal_device.mm    # devices, registration, buffers
  ${_metal_dir}/metal_compiler.mm  # libraries, function constants, pipelines
  ${_metal_dir}/metal_queue.mm     # command buffers, argument binding, completion
  ${_metal_dir}/metal_texture.mm   # textures over buffers, sampler states
)
list(APPEND METALCALL_BACKEND_SOURCES ${_metal_objcxx_sources} ${_metal_dir}/metal_support.cpp)

# ARC for the .mm files only (each also refuses to compile without it).
set_source_files_properties(${_metal_objcxx_sources} PROPERTIES COMPILE_OPTIONS "-fobjc-arc")

# CoreGraphics: Apple's documentation of MTLCreateSystemDefaultDevice says a process that
# does not use graphics (like a Python interpreter) must link it to get the default device.
list(APPEND METALCALL_BACKEND_LIBS "-framework Metal" "-framework Foundation" "-framework CoreGraphics")
