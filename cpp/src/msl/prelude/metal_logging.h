// metalcall MSL prelude: metal::os_log (MSL 3.2 <metal_logging>). The translated backends
// have no log stream: messages are accepted and discarded.
#pragma once

namespace metal {

struct os_log {
  METAL_FUNC constexpr os_log(const char*, const char*) {}
  template <class... A> METAL_FUNC void log(const char*, A...) const {}
  template <class... A> METAL_FUNC void log_debug(const char*, A...) const {}
  template <class... A> METAL_FUNC void log_info(const char*, A...) const {}
  template <class... A> METAL_FUNC void log_error(const char*, A...) const {}
  template <class... A> METAL_FUNC void log_fault(const char*, A...) const {}
};

// The default log (Tint's WGSL `print`: `os_log_default.log(...)`).
#if METAL_CUDA
__device__ constexpr os_log os_log_default("", "");
#else
inline constexpr os_log os_log_default("", "");
#endif

}  // namespace metal
