// The Metal compiler: MSL through newLibraryWithSource (options, compile errors) and
// .metallib images into libraries; from a library, specialised functions (function
// constants) and pipelines, with Metal's reflection merged into the front end's table.
#if !__has_feature(objc_arc)
#error "metal_compiler.mm needs ARC: compile it with -fobjc-arc (metal.cmake sets it)"
#endif

#include <Availability.h>
#include <Foundation/Foundation.h>
#include <Metal/Metal.h>
#include <dispatch/dispatch.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "backends/metal/metal_backend.hpp"
#include "backends/translated/host_cxx.hpp"
#include "metalcall/errors.hpp"
#include "msl/parse/function_constants.hpp"
#include "msl/parse/signature_parser.hpp"
#include "msl/translate/front_end.hpp"

namespace metalcall::metal {

MetalProgram::MetalProgram(KernelInfo info, void* retained_pipeline, std::uint64_t registry_id,
                           std::size_t static_threadgroup_memory)
    : PlanProgram(std::move(info), registry_id, static_threadgroup_memory),
      pipeline_(retained_pipeline) {}

MetalProgram::~MetalProgram() {
  // Hands the reference taken over in the constructor back to ARC, which releases it here.
  (void)(__bridge_transfer id<MTLComputePipelineState>)pipeline_;
}

namespace {

struct ElementType {
  ScalarType scalar = ScalarType::unknown;
  int width = 1;
};

ElementType element_type(MTLDataType type) {
  switch (type) {
    case MTLDataTypeBool: return {ScalarType::boolean, 1};
    case MTLDataTypeBool2: return {ScalarType::boolean, 2};
    case MTLDataTypeBool3: return {ScalarType::boolean, 3};
    case MTLDataTypeBool4: return {ScalarType::boolean, 4};
    case MTLDataTypeChar: return {ScalarType::i8, 1};
    case MTLDataTypeChar2: return {ScalarType::i8, 2};
    case MTLDataTypeChar3: return {ScalarType::i8, 3};
    case MTLDataTypeChar4: return {ScalarType::i8, 4};
    case MTLDataTypeUChar: return {ScalarType::u8, 1};
    case MTLDataTypeUChar2: return {ScalarType::u8, 2};
    case MTLDataTypeUChar3: return {ScalarType::u8, 3};
    case MTLDataTypeUChar4: return {ScalarType::u8, 4};
    case MTLDataTypeShort: return {ScalarType::i16, 1};
    case MTLDataTypeShort2: return {ScalarType::i16, 2};
    case MTLDataTypeShort3: return {ScalarType::i16, 3};
    case MTLDataTypeShort4: return {ScalarType::i16, 4};
    case MTLDataTypeUShort: return {ScalarType::u16, 1};
    case MTLDataTypeUShort2: return {ScalarType::u16, 2};
    case MTLDataTypeUShort3: return {ScalarType::u16, 3};
    case MTLDataTypeUShort4: return {ScalarType::u16, 4};
    case MTLDataTypeInt: return {ScalarType::i32, 1};
    case MTLDataTypeInt2: return {ScalarType::i32, 2};
    case MTLDataTypeInt3: return {ScalarType::i32, 3};
    case MTLDataTypeInt4: return {ScalarType::i32, 4};
    case MTLDataTypeUInt: return {ScalarType::u32, 1};
    case MTLDataTypeUInt2: return {ScalarType::u32, 2};
    case MTLDataTypeUInt3: return {ScalarType::u32, 3};
    case MTLDataTypeUInt4: return {ScalarType::u32, 4};
    case MTLDataTypeHalf: return {ScalarType::f16, 1};
    case MTLDataTypeHalf2: return {ScalarType::f16, 2};
    case MTLDataTypeHalf3: return {ScalarType::f16, 3};
    case MTLDataTypeHalf4: return {ScalarType::f16, 4};
    case MTLDataTypeFloat: return {ScalarType::f32, 1};
    case MTLDataTypeFloat2: return {ScalarType::f32, 2};
    case MTLDataTypeFloat3: return {ScalarType::f32, 3};
    case MTLDataTypeFloat4: return {ScalarType::f32, 4};
    default: break;
  }
#if __MAC_OS_X_VERSION_MAX_ALLOWED >= 140000
  if (@available(macOS 14.0, *)) {
    switch (type) {
      case MTLDataTypeLong: return {ScalarType::i64, 1};
      case MTLDataTypeULong: return {ScalarType::u64, 1};
      case MTLDataTypeBFloat: return {ScalarType::bf16, 1};
      default: break;
    }
  }
#endif
  return {};
}

// The simulator's types of function constants (metal_plan/function_constants.hpp) are Metal's
// (long, ulong and bfloat are macOS 14's, which a constant expression cannot name unguarded).
static_assert(metal_data_type(ScalarType::f32, 1) == MTLDataTypeFloat && metal_data_type(ScalarType::f32, 4) == MTLDataTypeFloat4);
static_assert(metal_data_type(ScalarType::f16, 1) == MTLDataTypeHalf && metal_data_type(ScalarType::f16, 3) == MTLDataTypeHalf3);
static_assert(metal_data_type(ScalarType::i32, 1) == MTLDataTypeInt && metal_data_type(ScalarType::i32, 4) == MTLDataTypeInt4);
static_assert(metal_data_type(ScalarType::u32, 1) == MTLDataTypeUInt && metal_data_type(ScalarType::u32, 2) == MTLDataTypeUInt2);
static_assert(metal_data_type(ScalarType::i16, 1) == MTLDataTypeShort && metal_data_type(ScalarType::i16, 4) == MTLDataTypeShort4);
static_assert(metal_data_type(ScalarType::u16, 1) == MTLDataTypeUShort && metal_data_type(ScalarType::u16, 2) == MTLDataTypeUShort2);
static_assert(metal_data_type(ScalarType::i8, 1) == MTLDataTypeChar && metal_data_type(ScalarType::i8, 3) == MTLDataTypeChar3);
static_assert(metal_data_type(ScalarType::u8, 1) == MTLDataTypeUChar && metal_data_type(ScalarType::u8, 4) == MTLDataTypeUChar4);
static_assert(metal_data_type(ScalarType::boolean, 1) == MTLDataTypeBool && metal_data_type(ScalarType::boolean, 4) == MTLDataTypeBool4);

std::string type_name(MTLDataType type) {
  if (type == MTLDataTypeStruct) return "struct";
  if (type == MTLDataTypeArray) return "array";
  const ElementType element = element_type(type);
  if (element.scalar == ScalarType::unknown) return "type " + std::to_string(static_cast<NSUInteger>(type));
  return to_string(element.scalar) + (element.width > 1 ? std::to_string(element.width) : std::string());
}

NSString* ns_string(const std::string& text, const char* what) {
  NSString* string = [[NSString alloc] initWithBytes:text.data() length:text.size() encoding:NSUTF8StringEncoding];
  if (!string)
    throw CompileError(std::string("[metal] unable to build the library: the ") + what +
                       " is not valid UTF-8; pass UTF-8 text");
  return string;
}

std::string error_text(NSError* error) {
  return error ? from_utf8([[error localizedDescription] UTF8String]) : std::string("no reason given");
}

// The versions are a closed list, each used only where the running macOS has it.
MTLLanguageVersion language_version(const std::string& text) {
  const auto [major, minor] = parse_language_version(text);
  switch (major * 10 + minor) {
    case 20: return MTLLanguageVersion2_0;
    case 21: return MTLLanguageVersion2_1;
    case 22: return MTLLanguageVersion2_2;
    case 23: return MTLLanguageVersion2_3;
    case 24: return MTLLanguageVersion2_4;
    case 30: return MTLLanguageVersion3_0;
#if __MAC_OS_X_VERSION_MAX_ALLOWED >= 140000
    case 31:
      if (@available(macOS 14.0, *)) return MTLLanguageVersion3_1;
      break;
#endif
#if __MAC_OS_X_VERSION_MAX_ALLOWED >= 150000
    case 32:
      if (@available(macOS 15.0, *)) return MTLLanguageVersion3_2;
      break;
#endif
#if __MAC_OS_X_VERSION_MAX_ALLOWED >= 260000
    case 40:
      if (@available(macOS 26.0, *)) return MTLLanguageVersion4_0;
      break;
#endif
    default:
      break;
  }
  throw CompileError("[metal] language version " + text +
                     " is not available with this macOS and metalcall build: use one from 2.0 to 3.0, "
                     "newer ones as the OS has them, or leave it empty for the newest");
}

void set_math_mode(MTLCompileOptions* options, bool fast) {
#if __MAC_OS_X_VERSION_MAX_ALLOWED >= 150000
  if (@available(macOS 15.0, *)) {
    // What fastMathEnabled (deprecated in macOS 15) meant, in the new terms.
    [options setMathMode:fast ? MTLMathModeFast : MTLMathModeSafe];
    [options setMathFloatingPointFunctions:fast ? MTLMathFloatingPointFunctionsFast
                                                : MTLMathFloatingPointFunctionsPrecise];
    return;
  }
#endif
  [options setFastMathEnabled:fast];
}

MTLCompileOptions* compile_options(const CompileOptions& options) {
  MTLCompileOptions* out = [MTLCompileOptions new];
  set_math_mode(out, options.fast_math);
  if (!options.language_version.empty()) [out setLanguageVersion:language_version(options.language_version)];
  if (!options.defines.empty()) {
    NSMutableDictionary<NSString*, NSObject*>* macros =
        [NSMutableDictionary dictionaryWithCapacity:options.defines.size()];
    for (const auto& [name, value] : options.defines)
      [macros setObject:ns_string(value, "value of a define") forKey:ns_string(name, "name of a define")];
    [out setPreprocessorMacros:macros];
  }
  return out;
}

std::vector<BindingInfo> binding_infos(MTLComputePipelineReflection* reflection) {
  std::vector<BindingInfo> infos;
  for (id<MTLBinding> binding in [reflection bindings]) {
    BindingInfo info;
    info.index = static_cast<int>([binding index]);
    info.name = from_utf8([[binding name] UTF8String]);
    info.read_only = [binding access] == MTLBindingAccessReadOnly;
    switch ([binding type]) {
      case MTLBindingTypeBuffer: {
        id<MTLBufferBinding> buffer = (id<MTLBufferBinding>)binding;
        const MTLDataType type = [buffer bufferDataType];
        const ElementType element = element_type(type);
        info.kind = BindingInfo::Kind::buffer;
        info.data_size = [buffer bufferDataSize];
        info.alignment = [buffer bufferAlignment];
        info.scalar = element.scalar;
        info.vector_width = element.width;
        info.type_name = type_name(type);
        break;
      }
      case MTLBindingTypeThreadgroupMemory: {
        id<MTLThreadgroupBinding> memory = (id<MTLThreadgroupBinding>)binding;
        info.kind = BindingInfo::Kind::threadgroup_memory;
        info.data_size = [memory threadgroupMemoryDataSize];
        info.alignment = [memory threadgroupMemoryAlignment];
        break;
      }
      case MTLBindingTypeTexture: info.kind = BindingInfo::Kind::texture; break;
      case MTLBindingTypeSampler: info.kind = BindingInfo::Kind::sampler; break;
      default: info.kind = BindingInfo::Kind::other; break;
    }
    infos.push_back(std::move(info));
  }
  return infos;
}

// The function constants Metal reports for `function` (functionConstantsDictionary).
std::vector<FunctionConstantSlot> used_constants(id<MTLFunction> function) {
  std::vector<FunctionConstantSlot> used;
  NSDictionary<NSString*, MTLFunctionConstant*>* dictionary = [function functionConstantsDictionary];
  for (NSString* key in dictionary) {
    MTLFunctionConstant* constant = [dictionary objectForKey:key];
    FunctionConstantSlot c;
    c.name = from_utf8([[constant name] UTF8String]);
    c.index = [constant index];
    c.used = true;
    c.metal_type = static_cast<std::uint64_t>([constant type]);
    const ElementType element = element_type([constant type]);
    c.scalar = element.scalar;
    c.width = element.width;
    c.type_name = type_name([constant type]);
    c.required = [constant required];
    used.push_back(std::move(c));
  }
  return used;
}

// The kernel functions of `library`, in the order Metal lists them.
std::vector<std::string> kernel_function_names(id<MTLLibrary> library) {
  std::vector<std::string> names;
  for (NSString* name in [library functionNames]) {
    id<MTLFunction> function = [library newFunctionWithName:name];
    if (function && [function functionType] == MTLFunctionTypeKernel) names.push_back(from_utf8([name UTF8String]));
  }
  return names;
}

class MetalLibrary final : public BackendLibrary {
 public:
  MetalLibrary(id<MTLDevice> device, std::uint64_t registry_id, id<MTLLibrary> library, std::vector<KernelInfo> kernels,
               std::vector<msl::FunctionConstantDecl> constants, std::vector<std::string> names)
      : device_(device),
        registry_id_(registry_id),
        library_(library),
        kernels_(std::move(kernels)),
        constants_(std::move(constants)),
        names_(std::move(names)) {}

  std::vector<std::string> function_names() const override { return names_; }

  // Core caches the programs of a library by name and constants; this builds one.
  std::shared_ptr<Program> make_program(const std::string& name,
                                        const std::vector<FunctionConstant>& constants) override {
    std::shared_ptr<Program> program;
    with_autorelease_pool([&] { program = build(name, constants); });
    return program;
  }

 private:
  std::shared_ptr<MetalProgram> build(const std::string& name, const std::vector<FunctionConstant>& constants) {
    // Core has checked `name` against function_names().
    const KernelInfo* source_info = nullptr;
    for (const KernelInfo& kernel : kernels_)
      if (kernel.name == name) source_info = &kernel;
    NSString* function_name = [NSString stringWithUTF8String:name.c_str()];
    id<MTLFunction> function = function_name ? [library_ newFunctionWithName:function_name] : nil;
    if (!function)
      throw CompileError("[metal] unable to get kernel '" + name + "' from its library, although the library lists "
                         "it; this is a metalcall bug: please report it with the kernel source");
    if ([function functionType] != MTLFunctionTypeKernel)
      throw CompileError("[metal] unable to use '" + name + "': Metal has it as a function that is not a kernel, "
                         "although the library lists it as one; this is a metalcall bug: please report it with "
                         "the kernel source");
    const Specialisation specialised = specialisation(name, used_constants(function), declared_slots(), constants);
    if (specialised.specialise) {
      MTLFunctionConstantValues* values = [MTLFunctionConstantValues new];
      for (const FunctionConstantValue& v : specialised.values)
        [values setConstantValue:v.bytes.data() type:static_cast<MTLDataType>(v.metal_type) atIndex:v.index];
      NSError* error = nil;
      function = [library_ newFunctionWithName:function_name constantValues:values error:&error];
      if (!function)
        throw CompileError("[metal] unable to specialise kernel '" + name + "' with its function constants: " +
                               error_text(error),
                           error_text(error));
    }
    MTLComputePipelineReflection* reflection = nil;
    NSError* error = nil;
    id<MTLComputePipelineState> pipeline =
        [device_ newComputePipelineStateWithFunction:function
                                             options:MTLPipelineOptionBindingInfo | MTLPipelineOptionBufferTypeInfo
                                          reflection:&reflection
                                               error:&error];
    if (!pipeline)
      throw CompileError("[metal] unable to build the pipeline of kernel '" + name + "': " + error_text(error),
                         error_text(error));
    const std::vector<BindingInfo> bindings = binding_infos(reflection);
    KernelInfo info = source_info ? *source_info : kernel_info_from_bindings(name, bindings);
    if (source_info) merge_reflection(info, bindings);
    if (source_info) msl::enable_params(info, declared_constants(), constants);  // as on the CPU and CUDA
    info.max_total_threads_per_threadgroup = static_cast<unsigned>([pipeline maxTotalThreadsPerThreadgroup]);
    info.thread_execution_width = static_cast<unsigned>([pipeline threadExecutionWidth]);
    return std::make_shared<MetalProgram>(std::move(info), (__bridge_retained void*)pipeline, registry_id_,
                                          [pipeline staticThreadgroupMemoryLength]);
  }

  // The source's constants as specialisation() takes them.
  std::vector<FunctionConstantSlot> declared_slots() const {
    std::vector<FunctionConstantSlot> slots;
    for (const msl::FunctionConstantDecl& c : constants_) {
      FunctionConstantSlot s;
      s.name = c.name;
      s.index = static_cast<std::size_t>(c.index);
      s.scalar = c.scalar;
      s.width = c.vector_width;
      s.type_name = c.type_name;
      slots.push_back(std::move(s));
    }
    return slots;
  }

  // The source's constants as msl::enable_params takes them.
  std::vector<msl::FunctionConstantInfo> declared_constants() const {
    std::vector<msl::FunctionConstantInfo> declared;
    for (const msl::FunctionConstantDecl& c : constants_) declared.push_back({c.name, c.index, c.scalar, c.type_name, c.vector_width});
    return declared;
  }

  id<MTLDevice> device_;
  std::uint64_t registry_id_;
  id<MTLLibrary> library_;
  std::vector<KernelInfo> kernels_;  // from the MSL front end; empty for a .metallib
  std::vector<msl::FunctionConstantDecl> constants_;  // the source's [[function_constant]]s
  std::vector<std::string> names_;
};

}  // namespace

std::shared_ptr<BackendLibrary> compile_library(void* device_handle, std::uint64_t registry_id, const std::string& source,
                                                const CompileOptions& options) {
  std::shared_ptr<BackendLibrary> library;
  with_autorelease_pool([&] {
    id<MTLDevice> device = (__bridge id<MTLDevice>)device_handle;
    MTLCompileOptions* metal_options = compile_options(options);
    NSError* error = nil;
    id<MTLLibrary> compiled = [device newLibraryWithSource:ns_string(source, "source")
                                                   options:metal_options
                                                     error:&error];
    if (!compiled) throw compile_error_from_log(error_text(error), source, "[metal] unable to build the library");
    // Metal accepted the source; the front end gives the parameter tables of the source as Metal
    // compiled it (preprocessed with the defines and this language version's __METAL_VERSION__,
    // by the host compiler's preprocessor, as on the CPU), checked against Metal's kernel list.
    msl::SourceReflection reflected =
        msl::reflect_source(source, options.defines, translated::host_preprocessor("metal"),
                            metal_version_macro(static_cast<std::uint64_t>([metal_options languageVersion])));
    std::vector<std::string> names;
    for (const KernelInfo& kernel : reflected.kernels) names.push_back(kernel.name);
    check_kernel_names(names, kernel_function_names(compiled), "[metal]");
    std::vector<KernelInfo> kernels = std::move(reflected.kernels);
    library = std::make_shared<MetalLibrary>(device, registry_id, compiled, std::move(kernels),
                                             std::move(reflected.function_constants), std::move(names));
  });
  return library;
}

std::shared_ptr<BackendLibrary> load_library(void* device_handle, std::uint64_t registry_id,
                                             const std::vector<std::uint8_t>& bytes) {
  if (bytes.empty())
    throw CompileError("[metal] unable to load the library: the .metallib image is empty; pass the bytes or the "
                       "path of a .metallib file");
  std::shared_ptr<BackendLibrary> library;
  with_autorelease_pool([&] {
    id<MTLDevice> device = (__bridge id<MTLDevice>)device_handle;
    dispatch_data_t data = dispatch_data_create(bytes.data(), bytes.size(), nullptr, DISPATCH_DATA_DESTRUCTOR_DEFAULT);
    NSError* error = nil;
    id<MTLLibrary> loaded = [device newLibraryWithData:data error:&error];
    if (!loaded)
      throw CompileError("[metal] unable to load the library: " + error_text(error) +
                             ". Pass a .metallib built by `xcrun metallib` for this macOS, or compile the source",
                         error_text(error));
    std::vector<std::string> names = kernel_function_names(loaded);
    std::sort(names.begin(), names.end());
    library = std::make_shared<MetalLibrary>(device, registry_id, loaded, std::vector<KernelInfo>{},
                                             std::vector<msl::FunctionConstantDecl>{}, std::move(names));
  });
  return library;
}

}  // namespace metalcall::metal
