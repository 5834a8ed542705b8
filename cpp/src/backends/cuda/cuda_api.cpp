#include "backends/cuda/cuda_api.hpp"

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <vector>

namespace metalcall::cuda {

namespace {

// The file a loaded library came from (by one of its symbols).
std::string loaded_path(void* symbol) {
  Dl_info info{};
  if (symbol && dladdr(symbol, &info) && info.dli_fname) return info.dli_fname;
  return "";
}

bool is_stub(const std::string& path) { return path.find("/stubs/") != std::string::npos; }

std::string parent(const std::string& path) {
  auto p = path.rfind('/');
  return p == std::string::npos ? std::string(".") : path.substr(0, p);
}

// Folders that may hold NVRTC besides the loader's own search path.
std::vector<std::string> nvrtc_folders() {
  std::vector<std::string> out;
  for (const char* var : {"CUDA_PATH", "CUDA_HOME", "CUDA_ROOT"}) {
    const char* v = std::getenv(var);
    if (v && *v) {
      out.push_back(std::string(v) + "/lib64");
      out.push_back(std::string(v) + "/lib");
    }
  }
  out.push_back("/usr/local/cuda/lib64");
  out.push_back("/usr/local/cuda/targets/x86_64-linux/lib");
  out.push_back("/usr/local/cuda/targets/sbsa-linux/lib");
  // The Python environment this extension lives in: the nvidia-cuda-nvrtc wheels.
  const std::string self = loaded_path(reinterpret_cast<void*>(&api));
  if (!self.empty()) {
    const std::string site = parent(parent(self));
    for (const char* sub : {"/nvidia/cu13/lib", "/nvidia/cuda_nvrtc/lib", "/nvidia/cu12/lib"}) out.push_back(site + sub);
  }
  return out;
}

template <class F> bool bind(void* lib, F& fn, const char* name, std::string* missing) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!fn && missing->empty()) *missing = name;
  return fn != nullptr;
}

void load_driver(Api& a) {
  if (const char* off = std::getenv("METALCALL_CUDA")) {
    if (std::string(off) == "0") {
      a.driver_problem = "the CUDA backend is disabled by METALCALL_CUDA=0";
      return;
    }
  }
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    a.driver_problem = std::string("the NVIDIA driver library libcuda.so.1 was not found (") + (why ? why : "") +
                       "); install the NVIDIA driver, or run on a machine with an NVIDIA GPU";
    return;
  }
  std::string missing;
#define MC_BIND(field, name) bind(lib, a.field, name, &missing)
  MC_BIND(cuInit, "cuInit");
  MC_BIND(cuDriverGetVersion, "cuDriverGetVersion");
  MC_BIND(cuGetErrorName, "cuGetErrorName");
  MC_BIND(cuGetErrorString, "cuGetErrorString");
  MC_BIND(cuDeviceGetCount, "cuDeviceGetCount");
  MC_BIND(cuDeviceGet, "cuDeviceGet");
  MC_BIND(cuDeviceGetName, "cuDeviceGetName");
  MC_BIND(cuDeviceTotalMem, "cuDeviceTotalMem_v2");
  MC_BIND(cuDeviceGetAttribute, "cuDeviceGetAttribute");
  MC_BIND(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  MC_BIND(cuCtxSetCurrent, "cuCtxSetCurrent");
  MC_BIND(cuMemGetInfo, "cuMemGetInfo_v2");
  MC_BIND(cuMemAllocManaged, "cuMemAllocManaged");
  MC_BIND(cuMemAlloc, "cuMemAlloc_v2");
  MC_BIND(cuMemFree, "cuMemFree_v2");
  MC_BIND(cuMemAllocHost, "cuMemAllocHost_v2");
  MC_BIND(cuMemFreeHost, "cuMemFreeHost");
  MC_BIND(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  MC_BIND(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  MC_BIND(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  MC_BIND(cuMemcpy, "cuMemcpy");
  MC_BIND(cuMemcpyAsync, "cuMemcpyAsync");
  MC_BIND(cuMemsetD8Async, "cuMemsetD8Async");
  MC_BIND(cuPointerGetAttribute, "cuPointerGetAttribute");
  MC_BIND(cuStreamWaitEvent, "cuStreamWaitEvent");
  MC_BIND(cuModuleLoadData, "cuModuleLoadData");
  MC_BIND(cuModuleUnload, "cuModuleUnload");
  MC_BIND(cuModuleGetFunction, "cuModuleGetFunction");
  MC_BIND(cuModuleGetGlobal, "cuModuleGetGlobal_v2");
  MC_BIND(cuFuncGetAttribute, "cuFuncGetAttribute");
  MC_BIND(cuFuncSetAttribute, "cuFuncSetAttribute");
  MC_BIND(cuLaunchKernel, "cuLaunchKernel");
  MC_BIND(cuStreamCreate, "cuStreamCreate");
  MC_BIND(cuStreamSynchronize, "cuStreamSynchronize");
  MC_BIND(cuStreamQuery, "cuStreamQuery");
  MC_BIND(cuEventCreate, "cuEventCreate");
  MC_BIND(cuEventDestroy, "cuEventDestroy_v2");
  MC_BIND(cuEventRecord, "cuEventRecord");
  MC_BIND(cuEventSynchronize, "cuEventSynchronize");
  MC_BIND(cuEventQuery, "cuEventQuery");
  MC_BIND(cuEventElapsedTime, "cuEventElapsedTime");
#undef MC_BIND
  // Optional: without them, recorded graphs replay by resubmitting their calls.
  std::string optional_missing;
  bind(lib, a.cuStreamBeginCapture, "cuStreamBeginCapture_v2", &optional_missing);
  bind(lib, a.cuStreamEndCapture, "cuStreamEndCapture", &optional_missing);
  bind(lib, a.cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", &optional_missing);
  bind(lib, a.cuGraphLaunch, "cuGraphLaunch", &optional_missing);
  bind(lib, a.cuGraphExecDestroy, "cuGraphExecDestroy", &optional_missing);
  bind(lib, a.cuGraphDestroy, "cuGraphDestroy", &optional_missing);
  std::string no_func_load;  // without it, cuModuleGetFunction and the first use load a kernel
  bind(lib, a.cuFuncLoad, "cuFuncLoad", &no_func_load);
  std::string no_prefetch;  // without it, host-written pages migrate on the GPU's first touch
  bind(lib, a.cuMemPrefetchAsync_v2, "cuMemPrefetchAsync_v2", &no_prefetch);
  bind(lib, a.cuMemPrefetchAsync, "cuMemPrefetchAsync", &no_prefetch);
  const std::string path = loaded_path(reinterpret_cast<void*>(a.cuInit));
  if (is_stub(path)) {
    a.driver_problem = "only the CUDA toolkit's stub libcuda (" + path + ") was found, not the NVIDIA driver's; "
                       "remove the stubs folder from LD_LIBRARY_PATH or install the driver";
    return;
  }
  if (!missing.empty()) {
    a.driver_problem = "libcuda.so.1 (" + path + ") lacks " + missing + ": the NVIDIA driver is too old; update it";
    return;
  }
  const CUresult r = a.cuInit(0);
  if (r != CUDA_SUCCESS) {
    a.driver_problem = "cuInit failed: " + a.error_text(r) +
                       (r == 100 ? " (no NVIDIA GPU is visible: check CUDA_VISIBLE_DEVICES and nvidia-smi)" : "");
    return;
  }
  a.cuDriverGetVersion(&a.driver_version);
  a.driver_ok = true;
}

void load_nvrtc(Api& a) {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("METALCALL_NVRTC")) {
    if (*env) candidates.push_back(env);
  }
  static const char* const kNames[] = {"libnvrtc.so.13", "libnvrtc.so.12"};
  for (const char* so : kNames) candidates.push_back(so);
  for (const auto& folder : nvrtc_folders())
    for (const char* so : kNames) candidates.push_back(folder + "/" + so);
  candidates.push_back("libnvrtc.so");
  std::string tried;
  for (const auto& c : candidates) {
    void* lib = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) continue;
    std::string missing;
#define MC_BIND(field) bind(lib, a.field, #field, &missing)
    MC_BIND(nvrtcVersion);
    MC_BIND(nvrtcGetErrorString);
    MC_BIND(nvrtcCreateProgram);
    MC_BIND(nvrtcDestroyProgram);
    MC_BIND(nvrtcCompileProgram);
    MC_BIND(nvrtcGetProgramLogSize);
    MC_BIND(nvrtcGetProgramLog);
    MC_BIND(nvrtcGetCUBINSize);
    MC_BIND(nvrtcGetCUBIN);
#undef MC_BIND
    const std::string path = loaded_path(reinterpret_cast<void*>(a.nvrtcVersion));
    if (!missing.empty() || is_stub(path)) {
      tried += (tried.empty() ? "" : ", ") + (path.empty() ? c : path);
      dlclose(lib);
      continue;
    }
    a.nvrtc_path = path;
    a.nvrtcVersion(&a.nvrtc_major, &a.nvrtc_minor);
    a.nvrtc_ok = true;
    return;
  }
  a.nvrtc_problem = "NVRTC (libnvrtc.so.13 or .12) was not found" + (tried.empty() ? std::string() : " (unusable: " + tried + ")") +
                    "; install the CUDA toolkit or `pip install nvidia-cuda-nvrtc`, or set METALCALL_NVRTC to "
                    "the library's path";
}

}  // namespace

std::string Api::error_text(CUresult r) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName) cuGetErrorName(r, &name);
  if (cuGetErrorString) cuGetErrorString(r, &text);
  return std::string(name ? name : "CUDA error " + std::to_string(r)) + (text ? std::string(": ") + text : "");
}

const Api& api() {
  static Api* a = [] {
    auto* x = new Api{};  // lives for the process
    load_driver(*x);
    if (x->driver_ok) load_nvrtc(*x);
    return x;
  }();
  return *a;
}

}  // namespace metalcall::cuda
