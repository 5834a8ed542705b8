// metalcall MSL prelude: the argument layouts of Metal's indirect draws and dispatches and of
// its tessellation factor buffers, which Apple's metal_stdlib declares so that a kernel can
// write them (GPU-driven pipelines: MoltenVK's indirect-draw conversions, SPIRV-Cross's
// tessellation control kernels). The fields are those of Metal's API structs of the same names
// (MTLRenderCommandEncoder.h, MTLComputeCommandEncoder.h): 32-bit words, half factors.
#pragma once
#include "metal_types.h"

struct MTLDispatchThreadgroupsIndirectArguments {
  uint32_t threadgroupsPerGrid[3];
};

struct MTLDrawPrimitivesIndirectArguments {
  uint32_t vertexCount;
  uint32_t instanceCount;
  uint32_t vertexStart;
  uint32_t baseInstance;
};

struct MTLDrawIndexedPrimitivesIndirectArguments {
  uint32_t indexCount;
  uint32_t instanceCount;
  uint32_t indexStart;
  int32_t baseVertex;
  uint32_t baseInstance;
};

struct MTLDrawPatchIndirectArguments {
  uint32_t patchCount;
  uint32_t instanceCount;
  uint32_t patchStart;
  uint32_t baseInstance;
};

struct MTLTriangleTessellationFactorsHalf {
  metal::mtl_half edgeTessellationFactor[3];
  metal::mtl_half insideTessellationFactor;
};

struct MTLQuadTessellationFactorsHalf {
  metal::mtl_half edgeTessellationFactor[4];
  metal::mtl_half insideTessellationFactor[2];
};

static_assert(sizeof(MTLDispatchThreadgroupsIndirectArguments) == 12, "Metal's layout");
static_assert(sizeof(MTLDrawIndexedPrimitivesIndirectArguments) == 20, "Metal's layout");
static_assert(sizeof(MTLTriangleTessellationFactorsHalf) == 8 && sizeof(MTLQuadTessellationFactorsHalf) == 12,
              "Metal's layout");
