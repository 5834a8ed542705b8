// The CUDA driver API and NVRTC, loaded with dlopen at run time: the extension
// builds and imports with no CUDA toolkit, and needs no CUDA header. Only the few
// types and entry points the backend uses are declared here (ABI-stable C API).
#pragma once

#include <cstddef>
#include <string>

namespace metalcall::cuda {

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st* CUcontext;
typedef struct CUmod_st* CUmodule;
typedef struct CUfunc_st* CUfunction;
typedef struct CUstream_st* CUstream;
typedef struct CUevent_st* CUevent;
typedef struct CUgraph_st* CUgraph;
typedef struct CUgraphExec_st* CUgraphExec;
typedef int nvrtcResult;
typedef struct _nvrtcProgram* nvrtcProgram;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;
constexpr CUresult CUDA_ERROR_NOT_READY = 600;

enum DeviceAttribute : int {
  MAX_THREADS_PER_BLOCK = 1,
  MAX_BLOCK_DIM_X = 2,
  MAX_BLOCK_DIM_Y = 3,
  MAX_BLOCK_DIM_Z = 4,
  MAX_GRID_DIM_X = 5,
  MAX_GRID_DIM_Y = 6,
  MAX_GRID_DIM_Z = 7,
  MAX_SHARED_MEMORY_PER_BLOCK = 8,
  WARP_SIZE = 10,
  COMPUTE_CAPABILITY_MAJOR = 75,
  COMPUTE_CAPABILITY_MINOR = 76,
  MANAGED_MEMORY = 83,
  CONCURRENT_MANAGED_ACCESS = 89,
  MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};
enum FunctionAttribute : int {
  FUNC_MAX_THREADS_PER_BLOCK = 0,
  FUNC_SHARED_SIZE_BYTES = 1,
  FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
};
enum PointerAttribute : int {
  POINTER_ATTRIBUTE_MEMORY_TYPE = 2,  // unsigned: 1 host, 2 device, 3 array, 4 unified
  POINTER_ATTRIBUTE_IS_MANAGED = 8,
  POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
};
constexpr unsigned CU_MEMORYTYPE_HOST = 1;
constexpr unsigned CU_MEM_ATTACH_GLOBAL = 1;
constexpr unsigned CU_STREAM_NON_BLOCKING = 1;
// cuda.h's CUmemLocation: a memory location kind (1: a device) and its ordinal.
struct CUmemLocation {
  int type;
  int id;
};
constexpr int CU_MEM_LOCATION_TYPE_DEVICE = 1;
constexpr int CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;
constexpr unsigned CU_EVENT_DEFAULT = 0;
constexpr unsigned CU_EVENT_DISABLE_TIMING = 2;

/** The loaded driver and NVRTC; every pointer is non-null once ok(). */
struct Api {
  // driver
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int*);
  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuGetErrorString)(CUresult, const char**);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuDeviceTotalMem)(std::size_t*, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuMemGetInfo)(std::size_t*, std::size_t*);
  CUresult (*cuMemAllocManaged)(CUdeviceptr*, std::size_t, unsigned);
  CUresult (*cuMemAlloc)(CUdeviceptr*, std::size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemAllocHost)(void**, std::size_t);  // page-locked host memory (staging NumPy arguments)
  CUresult (*cuMemFreeHost)(void*);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, std::size_t, CUstream);
  CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, std::size_t, CUstream);
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, std::size_t);
  CUresult (*cuMemcpy)(CUdeviceptr, CUdeviceptr, std::size_t);  // unified addressing: any direction, any GPU
  CUresult (*cuMemcpyAsync)(CUdeviceptr, CUdeviceptr, std::size_t, CUstream);
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, std::size_t, CUstream);
  // Optional (null where the driver lacks them): move managed pages to a GPU. The _v2 form
  // (drivers for CUDA 12.2 and later) takes a location; the first form a device ordinal.
  CUresult (*cuMemPrefetchAsync_v2)(CUdeviceptr, std::size_t, CUmemLocation, unsigned, CUstream) = nullptr;
  CUresult (*cuMemPrefetchAsync)(CUdeviceptr, std::size_t, CUdevice, CUstream) = nullptr;
  CUresult (*cuPointerGetAttribute)(void*, int, CUdeviceptr);   // what a foreign pointer is (imports)
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuModuleGetGlobal)(CUdeviceptr*, std::size_t*, CUmodule, const char*);
  CUresult (*cuFuncGetAttribute)(int*, int, CUfunction);
  CUresult (*cuFuncLoad)(CUfunction) = nullptr;  // optional (CUDA 12.4): loads a lazily loaded kernel now
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void**, void**);
  CUresult (*cuStreamCreate)(CUstream*, unsigned);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuStreamQuery)(CUstream);
  CUresult (*cuEventCreate)(CUevent*, unsigned);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  // CUDA graphs (record and replay); optional: null on a driver without them.
  CUresult (*cuStreamBeginCapture)(CUstream, int) = nullptr;
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph*) = nullptr;
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec*, CUgraph, unsigned long long) = nullptr;
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream) = nullptr;
  CUresult (*cuGraphExecDestroy)(CUgraphExec) = nullptr;
  CUresult (*cuGraphDestroy)(CUgraph) = nullptr;
  bool graphs_ok() const {
    return cuStreamBeginCapture && cuStreamEndCapture && cuGraphInstantiateWithFlags && cuGraphLaunch &&
           cuGraphExecDestroy && cuGraphDestroy;
  }
  CUresult (*cuEventQuery)(CUevent);
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);
  // NVRTC
  nvrtcResult (*nvrtcVersion)(int*, int*);
  const char* (*nvrtcGetErrorString)(nvrtcResult);
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                                    const char* const*);
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram*);
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char* const*);
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, std::size_t*);
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram, std::size_t*);
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram, char*);

  bool driver_ok = false;  // libcuda loaded and cuInit succeeded
  bool nvrtc_ok = false;
  std::string driver_problem;  // why not, and how to fix it
  std::string nvrtc_problem;
  std::string nvrtc_path;      // the library loaded
  int nvrtc_major = 0, nvrtc_minor = 0;
  int driver_version = 0;      // e.g. 13000

  bool ok() const { return driver_ok && nvrtc_ok; }
  /** "CUDA_ERROR_…: description" */
  std::string error_text(CUresult r) const;
};

/** Loads both libraries once (never throws). */
const Api& api();

}  // namespace metalcall::cuda
