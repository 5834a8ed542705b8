// metalcall MSL prelude: MSL's unsigned scalar names as the translator spells them
// (uint -> mtl_uint), apart from the vector names of metal_types.h: a kernel of scalars
// compiled for CUDA includes this and not the vectors (metal_stdlib.h, prelude parts).
#pragma once

namespace metal {
typedef unsigned char mtl_uchar;
typedef unsigned short mtl_ushort;
typedef unsigned int mtl_uint;
typedef unsigned long mtl_ulong;  // 64-bit on the LP64 hosts and CUDA targets we support
}  // namespace metal

using metal::mtl_uchar;
using metal::mtl_ushort;
using metal::mtl_uint;
using metal::mtl_ulong;
