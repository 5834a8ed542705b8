"""The part of Metal that cpp/src/backends/metal uses, as the Linux check declares it.

Two records meet here (docs/metal-backend.md explains the scheme):

* The pyobjc-framework-Metal metadata (an independent record made from Apple's SDK by
  PyObjC) is the authority for every selector's *spelling*, its argument count and its
  argument/return *encodings*, for enum values and for C function signatures.
  generate_headers.py refuses any entry below that the metadata does not confirm.
* The metadata does not say which protocol or class declares a selector, when it
  appeared, or which Objective-C type stands behind an `@` or a `Q`. Those come from
  Apple's documentation pages (https://developer.apple.com/documentation/metal/<type>
  and .../<type>/<member>), recorded here: `owner`, `macos` (the version that
  introduced it), and refinements of `@`/`Q`/block encodings to the documented types.
  A refinement must fit the encoding (an object for `@`, an integer enum for `Q`/`q`,
  a block for `@?`); the generator checks that.

Only what is listed is declared, so the backend cannot use a selector, enum value or
function that no one has looked up. Class members that PyObjC reads from the runtime
are absent from its metadata; those carry their encoding here (`encoding`) and the
check counts them apart as "documented only".

Entry forms:
    member:  (selector, macos, {options})   options: returns, args, encoding, deprecated, sdk
    enum:    name -> (kind "enum"|"options", underlying, macos, [(value name, macos[, sdk])])
`sdk` is the first SDK that declares an entry when it differs from `macos` (enum cases
added to an older enum); the check compiles against the SDKs of macOS 13, 14, 15 and
the newest, leaving out what an older SDK lacks.
"""

DEPLOYMENT_TARGET = "13.0"

# name -> (parent protocols, macos, members)
PROTOCOLS = {
    "MTLDevice": (["NSObject"], "10.11", [
        ("name", "10.11", {"returns": "NSString*"}),
        ("registryID", "10.13"),
        ("hasUnifiedMemory", "10.15"),
        # Which GPU index 0 opens without MTLCreateSystemDefaultDevice (metal_device.mm).
        ("isLowPower", "10.11"),
        ("isRemovable", "10.13"),
        ("recommendedMaxWorkingSetSize", "10.12"),
        ("maxBufferLength", "10.14"),
        ("maxThreadsPerThreadgroup", "10.11"),
        ("maxThreadgroupMemoryLength", "10.13"),
        ("supportsFamily:", "10.15", {"args": ["MTLGPUFamily"]}),
        ("newCommandQueue", "10.11", {"returns": "id<MTLCommandQueue>"}),
        ("newBufferWithLength:options:", "10.11",
         {"args": ["NSUInteger", "MTLResourceOptions"], "returns": "id<MTLBuffer>"}),
        # Swift: makeBuffer(bytesNoCopy: UnsafeMutableRawPointer, …): a non-const pointer.
        ("newBufferWithBytesNoCopy:length:options:deallocator:", "10.11",
         {"args": ["void*", "NSUInteger", "MTLResourceOptions", "void (^)(void*, NSUInteger)"],
          "returns": "id<MTLBuffer>"}),
        ("newLibraryWithSource:options:error:", "10.11",
         {"args": ["NSString*", "MTLCompileOptions*", "NSError**"], "returns": "id<MTLLibrary>"}),
        ("newLibraryWithData:error:", "10.11",
         {"args": ["dispatch_data_t", "NSError**"], "returns": "id<MTLLibrary>"}),
        ("newComputePipelineStateWithFunction:error:", "10.11",
         {"args": ["id<MTLFunction>", "NSError**"], "returns": "id<MTLComputePipelineState>"}),
        ("newComputePipelineStateWithFunction:options:reflection:error:", "10.11",
         {"args": ["id<MTLFunction>", "MTLPipelineOption", "MTLComputePipelineReflection**", "NSError**"],
          "returns": "id<MTLComputePipelineState>"}),
        # Textures and samplers (metal_texture.mm).
        ("minimumLinearTextureAlignmentForPixelFormat:", "10.13", {"args": ["MTLPixelFormat"]}),
        ("newSamplerStateWithDescriptor:", "10.11",
         {"args": ["MTLSamplerDescriptor*"], "returns": "id<MTLSamplerState>"}),
        # Staged textures (not 2-D, or mipmapped): an MTLTexture of their own.
        ("newTextureWithDescriptor:", "10.11",
         {"args": ["MTLTextureDescriptor*"], "returns": "id<MTLTexture>"}),
    ]),
    "MTLResource": (["NSObject"], "10.11", []),
    "MTLBuffer": (["MTLResource"], "10.11", [
        ("contents", "10.11"),
        ("length", "10.11"),
        ("newTextureWithDescriptor:offset:bytesPerRow:", "10.13",
         {"args": ["MTLTextureDescriptor*", "NSUInteger", "NSUInteger"], "returns": "id<MTLTexture>"}),
    ]),
    "MTLTexture": (["MTLResource"], "10.11", []),
    "MTLSamplerState": (["NSObject"], "10.11", []),
    "MTLCommandQueue": (["NSObject"], "10.11", [
        ("commandBuffer", "10.11", {"returns": "id<MTLCommandBuffer>"}),
    ]),
    "MTLCommandBuffer": (["NSObject"], "10.11", [
        ("computeCommandEncoder", "10.11", {"returns": "id<MTLComputeCommandEncoder>"}),
        ("blitCommandEncoder", "10.11", {"returns": "id<MTLBlitCommandEncoder>"}),
        ("addCompletedHandler:", "10.11", {"args": ["void (^)(id<MTLCommandBuffer>)"]}),
        ("commit", "10.11"),
        ("status", "10.11", {"returns": "MTLCommandBufferStatus"}),
        ("error", "10.11", {"returns": "NSError*"}),
        ("GPUStartTime", "10.15"),
        ("GPUEndTime", "10.15"),
    ]),
    "MTLCommandEncoder": (["NSObject"], "10.11", [
        ("endEncoding", "10.11"),
    ]),
    # Staged textures' copies between their buffer and their MTLTexture (metal_texture.mm).
    "MTLBlitCommandEncoder": (["MTLCommandEncoder"], "10.11", [
        # A binding realigned for setBuffer:offset: (the planner's aligned copies).
        ("copyFromBuffer:sourceOffset:toBuffer:destinationOffset:size:", "10.11",
         {"args": ["id<MTLBuffer>", "NSUInteger", "id<MTLBuffer>", "NSUInteger", "NSUInteger"]}),
        ("copyFromBuffer:sourceOffset:sourceBytesPerRow:sourceBytesPerImage:sourceSize:toTexture:"
         "destinationSlice:destinationLevel:destinationOrigin:", "10.11",
         {"args": ["id<MTLBuffer>", "NSUInteger", "NSUInteger", "NSUInteger", "MTLSize", "id<MTLTexture>",
                   "NSUInteger", "NSUInteger", "MTLOrigin"]}),
        ("copyFromTexture:sourceSlice:sourceLevel:sourceOrigin:sourceSize:toBuffer:destinationOffset:"
         "destinationBytesPerRow:destinationBytesPerImage:", "10.11",
         {"args": ["id<MTLTexture>", "NSUInteger", "NSUInteger", "MTLOrigin", "MTLSize", "id<MTLBuffer>",
                   "NSUInteger", "NSUInteger", "NSUInteger"]}),
    ]),
    "MTLComputeCommandEncoder": (["MTLCommandEncoder"], "10.11", [
        ("setComputePipelineState:", "10.11", {"args": ["id<MTLComputePipelineState>"]}),
        ("setBuffer:offset:atIndex:", "10.11", {"args": ["id<MTLBuffer>", "NSUInteger", "NSUInteger"]}),
        # Swift: setBytes(_: UnsafeRawPointer, …): a const pointer.
        ("setBytes:length:atIndex:", "10.11", {"args": ["const void*", "NSUInteger", "NSUInteger"]}),
        ("setThreadgroupMemoryLength:atIndex:", "10.11"),
        ("setTexture:atIndex:", "10.11", {"args": ["id<MTLTexture>", "NSUInteger"]}),
        ("setSamplerState:atIndex:", "10.11", {"args": ["id<MTLSamplerState>", "NSUInteger"]}),
        ("dispatchThreads:threadsPerThreadgroup:", "10.13"),
        ("dispatchThreadgroups:threadsPerThreadgroup:", "10.11"),
    ]),
    "MTLComputePipelineState": (["NSObject"], "10.11", [
        ("maxTotalThreadsPerThreadgroup", "10.11"),
        ("threadExecutionWidth", "10.11"),
        ("staticThreadgroupMemoryLength", "10.13"),
    ]),
    "MTLLibrary": (["NSObject"], "10.11", [
        ("newFunctionWithName:", "10.11", {"args": ["NSString*"], "returns": "id<MTLFunction>"}),
        ("newFunctionWithName:constantValues:error:", "10.12",
         {"args": ["NSString*", "MTLFunctionConstantValues*", "NSError**"], "returns": "id<MTLFunction>"}),
        ("functionNames", "10.11", {"returns": "NSArray<NSString*>*"}),
    ]),
    "MTLFunction": (["NSObject"], "10.11", [
        ("functionType", "10.11", {"returns": "MTLFunctionType"}),
        ("functionConstantsDictionary", "10.12",
         {"returns": "NSDictionary<NSString*, MTLFunctionConstant*>*"}),
    ]),
    "MTLBinding": (["NSObject"], "13.0", [
        ("name", "13.0", {"returns": "NSString*"}),
        ("type", "13.0", {"returns": "MTLBindingType"}),
        ("access", "13.0", {"returns": "MTLBindingAccess"}),
        ("index", "13.0"),
    ]),
    "MTLBufferBinding": (["MTLBinding"], "13.0", [
        ("bufferAlignment", "13.0"),
        ("bufferDataSize", "13.0"),
        ("bufferDataType", "13.0", {"returns": "MTLDataType"}),
    ]),
    "MTLThreadgroupBinding": (["MTLBinding"], "13.0", [
        ("threadgroupMemoryAlignment", "13.0"),
        ("threadgroupMemoryDataSize", "13.0"),
    ]),
}

# name -> (superclass, macos, members)
CLASSES = {
    "MTLCompileOptions": ("NSObject", "10.11", [
        ("setFastMathEnabled:", "10.11", {"deprecated": "15.0", "encoding": ("v", [None])}),
        ("setLanguageVersion:", "10.11", {"args": ["MTLLanguageVersion"], "encoding": ("v", ["Q"])}),
        ("languageVersion", "10.11", {"returns": "MTLLanguageVersion", "encoding": ("Q", [])}),
        ("setPreprocessorMacros:", "10.11",
         {"args": ["NSDictionary<NSString*, NSObject*>*"], "encoding": ("v", ["@"])}),
        ("setMathMode:", "15.0", {"args": ["MTLMathMode"], "encoding": ("v", ["q"])}),
        ("setMathFloatingPointFunctions:", "15.0",
         {"args": ["MTLMathFloatingPointFunctions"], "encoding": ("v", ["q"])}),
    ]),
    "MTLFunctionConstantValues": ("NSObject", "10.12", [
        ("setConstantValue:type:atIndex:", "10.12",
         {"args": ["const void*", "MTLDataType", "NSUInteger"], "encoding": ("v", ["^v", "Q", "Q"])}),
    ]),
    "MTLFunctionConstant": ("NSObject", "10.12", [
        ("name", "10.12", {"returns": "NSString*", "encoding": ("@", [])}),
        ("type", "10.12", {"returns": "MTLDataType", "encoding": ("Q", [])}),
        ("index", "10.12", {"encoding": ("Q", [])}),
        ("required", "10.12"),
    ]),
    "MTLTextureDescriptor": ("NSObject", "10.11", [
        ("setTextureType:", "10.11", {"args": ["MTLTextureType"], "encoding": ("v", ["Q"])}),
        ("setPixelFormat:", "10.11", {"args": ["MTLPixelFormat"], "encoding": ("v", ["Q"])}),
        ("setWidth:", "10.11", {"args": ["NSUInteger"], "encoding": ("v", ["Q"])}),
        ("setHeight:", "10.11", {"args": ["NSUInteger"], "encoding": ("v", ["Q"])}),
        ("setDepth:", "10.11", {"args": ["NSUInteger"], "encoding": ("v", ["Q"])}),
        ("setArrayLength:", "10.11", {"args": ["NSUInteger"], "encoding": ("v", ["Q"])}),
        ("setMipmapLevelCount:", "10.11", {"args": ["NSUInteger"], "encoding": ("v", ["Q"])}),
        ("setStorageMode:", "10.11", {"args": ["MTLStorageMode"], "encoding": ("v", ["Q"])}),
        ("setUsage:", "10.11", {"args": ["MTLTextureUsage"], "encoding": ("v", ["Q"])}),
    ]),
    "MTLSamplerDescriptor": ("NSObject", "10.11", [
        ("setMinFilter:", "10.11", {"args": ["MTLSamplerMinMagFilter"], "encoding": ("v", ["Q"])}),
        ("setMagFilter:", "10.11", {"args": ["MTLSamplerMinMagFilter"], "encoding": ("v", ["Q"])}),
        ("setSAddressMode:", "10.11", {"args": ["MTLSamplerAddressMode"], "encoding": ("v", ["Q"])}),
        ("setTAddressMode:", "10.11", {"args": ["MTLSamplerAddressMode"], "encoding": ("v", ["Q"])}),
        ("setRAddressMode:", "10.11", {"args": ["MTLSamplerAddressMode"], "encoding": ("v", ["Q"])}),
        ("setNormalizedCoordinates:", "10.11", {"encoding": ("v", ["Z"])}),
        ("setBorderColor:", "10.12", {"args": ["MTLSamplerBorderColor"], "encoding": ("v", ["Q"])}),
        ("setMipFilter:", "10.11", {"args": ["MTLSamplerMipFilter"], "encoding": ("v", ["Q"])}),
        ("setLodMinClamp:", "10.11", {"encoding": ("v", ["f"])}),
        ("setLodMaxClamp:", "10.11", {"encoding": ("v", ["f"])}),
        ("setCompareFunction:", "10.11", {"args": ["MTLCompareFunction"], "encoding": ("v", ["Q"])}),
    ]),
    "MTLComputePipelineReflection": ("NSObject", "10.11", [
        ("bindings", "13.0", {"returns": "NSArray<id<MTLBinding>>*", "encoding": ("@", [])}),
    ]),
}

ENUMS = {
    "MTLPixelFormat": ("enum", "NSUInteger", "10.11", [
        ("MTLPixelFormatR8Unorm", "10.11"),
        ("MTLPixelFormatR8Unorm_sRGB", "11.0"),
        ("MTLPixelFormatR8Snorm", "10.11"),
        ("MTLPixelFormatR8Uint", "10.11"),
        ("MTLPixelFormatR8Sint", "10.11"),
        ("MTLPixelFormatR16Unorm", "10.11"),
        ("MTLPixelFormatR16Snorm", "10.11"),
        ("MTLPixelFormatR16Uint", "10.11"),
        ("MTLPixelFormatR16Sint", "10.11"),
        ("MTLPixelFormatR16Float", "10.11"),
        ("MTLPixelFormatR32Uint", "10.11"),
        ("MTLPixelFormatR32Sint", "10.11"),
        ("MTLPixelFormatR32Float", "10.11"),
        ("MTLPixelFormatRG8Unorm", "10.11"),
        ("MTLPixelFormatRG8Unorm_sRGB", "11.0"),
        ("MTLPixelFormatRG8Snorm", "10.11"),
        ("MTLPixelFormatRG8Uint", "10.11"),
        ("MTLPixelFormatRG8Sint", "10.11"),
        ("MTLPixelFormatRG16Unorm", "10.11"),
        ("MTLPixelFormatRG16Snorm", "10.11"),
        ("MTLPixelFormatRG16Uint", "10.11"),
        ("MTLPixelFormatRG16Sint", "10.11"),
        ("MTLPixelFormatRG16Float", "10.11"),
        ("MTLPixelFormatRG32Uint", "10.11"),
        ("MTLPixelFormatRG32Sint", "10.11"),
        ("MTLPixelFormatRG32Float", "10.11"),
        ("MTLPixelFormatRGBA8Unorm", "10.11"),
        ("MTLPixelFormatRGBA8Unorm_sRGB", "10.11"),
        ("MTLPixelFormatBGRA8Unorm", "10.11"),
        ("MTLPixelFormatBGRA8Unorm_sRGB", "10.11"),
        ("MTLPixelFormatRGB10A2Unorm", "10.11"),
        ("MTLPixelFormatRGB10A2Uint", "10.11"),
        ("MTLPixelFormatRG11B10Float", "10.11"),
        ("MTLPixelFormatRGB9E5Float", "10.11"),
        ("MTLPixelFormatRGBA8Snorm", "10.11"),
        ("MTLPixelFormatRGBA8Uint", "10.11"),
        ("MTLPixelFormatRGBA8Sint", "10.11"),
        ("MTLPixelFormatRGBA16Unorm", "10.11"),
        ("MTLPixelFormatRGBA16Snorm", "10.11"),
        ("MTLPixelFormatRGBA16Uint", "10.11"),
        ("MTLPixelFormatRGBA16Sint", "10.11"),
        ("MTLPixelFormatRGBA16Float", "10.11"),
        ("MTLPixelFormatRGBA32Uint", "10.11"),
        ("MTLPixelFormatRGBA32Sint", "10.11"),
        ("MTLPixelFormatRGBA32Float", "10.11"),
        ("MTLPixelFormatDepth32Float", "10.11"),
    ]),
    "MTLTextureType": ("enum", "NSUInteger", "10.11", [
        ("MTLTextureType1D", "10.11"),
        ("MTLTextureType1DArray", "10.11"),
        ("MTLTextureType2D", "10.11"),
        ("MTLTextureType2DArray", "10.11"),
        ("MTLTextureTypeCube", "10.11"),
        ("MTLTextureTypeCubeArray", "10.11"),
        ("MTLTextureType3D", "10.11"),
        ("MTLTextureTypeTextureBuffer", "10.14"),
    ]),
    "MTLStorageMode": ("enum", "NSUInteger", "10.11", [
        ("MTLStorageModeShared", "10.11"),
        ("MTLStorageModePrivate", "10.11"),
    ]),
    "MTLTextureUsage": ("options", "NSUInteger", "10.11", [
        ("MTLTextureUsageShaderRead", "10.11"),
        ("MTLTextureUsageShaderWrite", "10.11"),
        ("MTLTextureUsageShaderAtomic", "14.0"),
    ]),
    "MTLSamplerMinMagFilter": ("enum", "NSUInteger", "10.11", [
        ("MTLSamplerMinMagFilterNearest", "10.11"),
        ("MTLSamplerMinMagFilterLinear", "10.11"),
    ]),
    "MTLCompareFunction": ("enum", "NSUInteger", "10.11", [
        ("MTLCompareFunctionNever", "10.11"),
        ("MTLCompareFunctionLess", "10.11"),
        ("MTLCompareFunctionEqual", "10.11"),
        ("MTLCompareFunctionLessEqual", "10.11"),
        ("MTLCompareFunctionGreater", "10.11"),
        ("MTLCompareFunctionNotEqual", "10.11"),
        ("MTLCompareFunctionGreaterEqual", "10.11"),
        ("MTLCompareFunctionAlways", "10.11"),
    ]),
    "MTLSamplerMipFilter": ("enum", "NSUInteger", "10.11", [
        ("MTLSamplerMipFilterNotMipmapped", "10.11"),
        ("MTLSamplerMipFilterNearest", "10.11"),
        ("MTLSamplerMipFilterLinear", "10.11"),
    ]),
    "MTLSamplerAddressMode": ("enum", "NSUInteger", "10.11", [
        ("MTLSamplerAddressModeClampToEdge", "10.11"),
        ("MTLSamplerAddressModeMirrorClampToEdge", "10.11"),
        ("MTLSamplerAddressModeRepeat", "10.11"),
        ("MTLSamplerAddressModeMirrorRepeat", "10.11"),
        ("MTLSamplerAddressModeClampToZero", "10.11"),
        ("MTLSamplerAddressModeClampToBorderColor", "10.12"),
    ]),
    "MTLSamplerBorderColor": ("enum", "NSUInteger", "10.12", [
        ("MTLSamplerBorderColorTransparentBlack", "10.12"),
        ("MTLSamplerBorderColorOpaqueBlack", "10.12"),
        ("MTLSamplerBorderColorOpaqueWhite", "10.12"),
    ]),
    "MTLResourceOptions": ("options", "NSUInteger", "10.11", [
        ("MTLResourceStorageModeShared", "10.11"),
    ]),
    "MTLPipelineOption": ("options", "NSUInteger", "10.11", [
        ("MTLPipelineOptionBindingInfo", "13.0"),
        ("MTLPipelineOptionBufferTypeInfo", "10.11"),
    ]),
    "MTLGPUFamily": ("enum", "NSInteger", "10.15", [
        ("MTLGPUFamilyApple1", "10.15"),
        ("MTLGPUFamilyApple2", "10.15"),
        ("MTLGPUFamilyApple3", "10.15"),
        ("MTLGPUFamilyApple4", "10.15"),
        ("MTLGPUFamilyApple5", "10.15"),
        ("MTLGPUFamilyApple6", "10.15"),
        ("MTLGPUFamilyApple7", "10.15"),
        ("MTLGPUFamilyApple8", "10.15"),
        ("MTLGPUFamilyApple9", "10.15", "14.0"),  # a case the macOS 14 SDK added
        ("MTLGPUFamilyMac2", "10.15"),
    ]),
    "MTLLanguageVersion": ("enum", "NSUInteger", "10.11", [
        ("MTLLanguageVersion2_0", "10.13"),
        ("MTLLanguageVersion2_1", "10.14"),
        ("MTLLanguageVersion2_2", "10.15"),
        ("MTLLanguageVersion2_3", "11.0"),
        ("MTLLanguageVersion2_4", "12.0"),
        ("MTLLanguageVersion3_0", "13.0"),
        ("MTLLanguageVersion3_1", "14.0"),
        ("MTLLanguageVersion3_2", "15.0"),
        ("MTLLanguageVersion4_0", "26.0"),
    ]),
    "MTLMathMode": ("enum", "NSInteger", "15.0", [
        ("MTLMathModeSafe", "15.0"),
        ("MTLMathModeFast", "15.0"),
    ]),
    "MTLMathFloatingPointFunctions": ("enum", "NSInteger", "15.0", [
        ("MTLMathFloatingPointFunctionsFast", "15.0"),
        ("MTLMathFloatingPointFunctionsPrecise", "15.0"),
    ]),
    "MTLFunctionType": ("enum", "NSUInteger", "10.11", [
        ("MTLFunctionTypeKernel", "10.11"),
    ]),
    "MTLCommandBufferStatus": ("enum", "NSUInteger", "10.11", [
        ("MTLCommandBufferStatusError", "10.11"),
    ]),
    "MTLCommandBufferError": ("enum", "NSUInteger", "10.11", [
        ("MTLCommandBufferErrorTimeout", "10.11"),
        ("MTLCommandBufferErrorPageFault", "10.11"),
        ("MTLCommandBufferErrorNotPermitted", "10.11"),
        ("MTLCommandBufferErrorOutOfMemory", "10.11"),
        ("MTLCommandBufferErrorInvalidResource", "10.11"),
        ("MTLCommandBufferErrorDeviceRemoved", "10.13"),
    ]),
    "MTLBindingType": ("enum", "NSInteger", "11.0", [
        ("MTLBindingTypeBuffer", "11.0"),
        ("MTLBindingTypeThreadgroupMemory", "11.0"),
        ("MTLBindingTypeTexture", "11.0"),
        ("MTLBindingTypeSampler", "11.0"),
    ]),
    "MTLBindingAccess": ("enum", "NSUInteger", "11.0", [
        ("MTLBindingAccessReadOnly", "11.0"),
    ]),
    "MTLDataType": ("enum", "NSUInteger", "10.12", [
        ("MTLDataTypeNone", "10.12"), ("MTLDataTypeStruct", "10.12"), ("MTLDataTypeArray", "10.12"),
        ("MTLDataTypeFloat", "10.12"), ("MTLDataTypeFloat2", "10.12"),
        ("MTLDataTypeFloat3", "10.12"), ("MTLDataTypeFloat4", "10.12"),
        ("MTLDataTypeHalf", "10.12"), ("MTLDataTypeHalf2", "10.12"),
        ("MTLDataTypeHalf3", "10.12"), ("MTLDataTypeHalf4", "10.12"),
        ("MTLDataTypeInt", "10.12"), ("MTLDataTypeInt2", "10.12"),
        ("MTLDataTypeInt3", "10.12"), ("MTLDataTypeInt4", "10.12"),
        ("MTLDataTypeUInt", "10.12"), ("MTLDataTypeUInt2", "10.12"),
        ("MTLDataTypeUInt3", "10.12"), ("MTLDataTypeUInt4", "10.12"),
        ("MTLDataTypeShort", "10.12"), ("MTLDataTypeShort2", "10.12"),
        ("MTLDataTypeShort3", "10.12"), ("MTLDataTypeShort4", "10.12"),
        ("MTLDataTypeUShort", "10.12"), ("MTLDataTypeUShort2", "10.12"),
        ("MTLDataTypeUShort3", "10.12"), ("MTLDataTypeUShort4", "10.12"),
        ("MTLDataTypeChar", "10.12"), ("MTLDataTypeChar2", "10.12"),
        ("MTLDataTypeChar3", "10.12"), ("MTLDataTypeChar4", "10.12"),
        ("MTLDataTypeUChar", "10.12"), ("MTLDataTypeUChar2", "10.12"),
        ("MTLDataTypeUChar3", "10.12"), ("MTLDataTypeUChar4", "10.12"),
        ("MTLDataTypeBool", "10.12"), ("MTLDataTypeBool2", "10.12"),
        ("MTLDataTypeBool3", "10.12"), ("MTLDataTypeBool4", "10.12"),
        # Added with the macOS 14 SDK; guarded as if they were new in 14 as well.
        ("MTLDataTypeLong", "14.0"), ("MTLDataTypeULong", "14.0"), ("MTLDataTypeBFloat", "14.0"),
    ]),
}

# name -> (macos, return type, argument types): C functions.
FUNCTIONS = {
    "MTLCopyAllDevices": ("10.11", "NSArray<id<MTLDevice>>*", []),
}

STRUCTS = ["MTLSize", "MTLOrigin"]
