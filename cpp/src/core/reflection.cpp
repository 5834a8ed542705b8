// Names and sizes for the reflection enums.
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "metalcall/reflection.hpp"

namespace metalcall {

namespace {
// Which argument table a parameter binds to: 0 buffers, 1 threadgroup memory, 2 textures, 3 samplers.
int table_of(ParamKind kind) {
  switch (kind) {
    case ParamKind::buffer:
    case ParamKind::reference:
    case ParamKind::value: return 0;
    case ParamKind::threadgroup_memory: return 1;
    case ParamKind::texture: return 2;
    case ParamKind::sampler: return 3;
    case ParamKind::builtin: break;
  }
  return -1;
}

std::vector<const ParamInfo*> params_of_table(const KernelInfo& k, int table) {
  std::vector<const ParamInfo*> out;
  for (const auto& p : k.params)
    if (table_of(p.kind) == table) out.push_back(&p);
  std::stable_sort(out.begin(), out.end(),
                   [](const ParamInfo* a, const ParamInfo* b) { return a->binding < b->binding; });
  return out;
}
}  // namespace

std::vector<const ParamInfo*> KernelInfo::buffer_params() const { return params_of_table(*this, 0); }

std::vector<const ParamInfo*> KernelInfo::threadgroup_params() const { return params_of_table(*this, 1); }

std::vector<const ParamInfo*> KernelInfo::texture_params() const { return params_of_table(*this, 2); }

std::vector<const ParamInfo*> KernelInfo::sampler_params() const { return params_of_table(*this, 3); }

const char* to_string(TextureType t) {
  switch (t) {
    case TextureType::texture1d: return "texture1d";
    case TextureType::texture2d: return "texture2d";
    case TextureType::texture3d: return "texture3d";
    case TextureType::texture2d_array: return "texture2d_array";
    case TextureType::texturecube: return "texturecube";
    case TextureType::depth2d: return "depth2d";
    case TextureType::texturecube_array: return "texturecube_array";
    case TextureType::depth2d_array: return "depth2d_array";
    case TextureType::depthcube: return "depthcube";
    case TextureType::depthcube_array: return "depthcube_array";
    case TextureType::texture2d_ms: return "texture2d_ms";
    case TextureType::texture2d_ms_array: return "texture2d_ms_array";
    case TextureType::depth2d_ms: return "depth2d_ms";
    case TextureType::depth2d_ms_array: return "depth2d_ms_array";
    case TextureType::texture1d_array: return "texture1d_array";
    case TextureType::texture_buffer: return "texture_buffer";
    case TextureType::none: break;
  }
  return "none";
}

bool is_depth(TextureType t) {
  return t == TextureType::depth2d || t == TextureType::depth2d_array || t == TextureType::depthcube ||
         t == TextureType::depthcube_array || t == TextureType::depth2d_ms || t == TextureType::depth2d_ms_array;
}

bool is_cube(TextureType t) {
  return t == TextureType::texturecube || t == TextureType::texturecube_array || t == TextureType::depthcube ||
         t == TextureType::depthcube_array;
}

bool is_multisample(TextureType t) {
  return t == TextureType::texture2d_ms || t == TextureType::texture2d_ms_array || t == TextureType::depth2d_ms ||
         t == TextureType::depth2d_ms_array;
}

bool is_array(TextureType t) {
  return t == TextureType::texture2d_array || t == TextureType::texture1d_array || t == TextureType::texturecube_array || t == TextureType::depth2d_array ||
         t == TextureType::depthcube_array || t == TextureType::texture2d_ms_array || t == TextureType::depth2d_ms_array;
}

const char* to_string(TextureAccess a) {
  switch (a) {
    case TextureAccess::read: return "read";
    case TextureAccess::write: return "write";
    case TextureAccess::read_write: return "read_write";
    case TextureAccess::sample: break;
  }
  return "sample";
}

const char* to_string(AddressSpace a) {
  switch (a) {
    case AddressSpace::device: return "device";
    case AddressSpace::constant: return "constant";
    case AddressSpace::threadgroup: return "threadgroup";
    case AddressSpace::thread: return "thread";
    case AddressSpace::none: break;
  }
  return "none";
}

const char* to_string(ParamKind k) {
  switch (k) {
    case ParamKind::buffer: return "buffer";
    case ParamKind::reference: return "reference";
    case ParamKind::value: return "value";
    case ParamKind::threadgroup_memory: return "threadgroup_memory";
    case ParamKind::builtin: return "builtin";
    case ParamKind::texture: return "texture";
    case ParamKind::sampler: return "sampler";
  }
  return "?";
}

namespace {
const std::pair<Builtin, const char*> kBuiltinNames[] = {
    {Builtin::thread_position_in_grid, "thread_position_in_grid"},
    {Builtin::thread_position_in_threadgroup, "thread_position_in_threadgroup"},
    {Builtin::threadgroup_position_in_grid, "threadgroup_position_in_grid"},
    {Builtin::threads_per_threadgroup, "threads_per_threadgroup"},
    {Builtin::threadgroups_per_grid, "threadgroups_per_grid"},
    {Builtin::threads_per_grid, "threads_per_grid"},
    {Builtin::thread_index_in_threadgroup, "thread_index_in_threadgroup"},
    {Builtin::thread_index_in_simdgroup, "thread_index_in_simdgroup"},
    {Builtin::simdgroup_index_in_threadgroup, "simdgroup_index_in_threadgroup"},
    {Builtin::threads_per_simdgroup, "threads_per_simdgroup"},
    {Builtin::simdgroups_per_threadgroup, "simdgroups_per_threadgroup"},
    {Builtin::dispatch_threads_per_threadgroup, "dispatch_threads_per_threadgroup"},
    {Builtin::thread_execution_width, "thread_execution_width"},
    {Builtin::dispatch_simdgroups_per_threadgroup, "dispatch_simdgroups_per_threadgroup"},
    {Builtin::thread_index_in_quadgroup, "thread_index_in_quadgroup"},
    {Builtin::quadgroup_index_in_threadgroup, "quadgroup_index_in_threadgroup"},
    {Builtin::quadgroups_per_threadgroup, "quadgroups_per_threadgroup"},
    {Builtin::dispatch_quadgroups_per_threadgroup, "dispatch_quadgroups_per_threadgroup"},
    {Builtin::grid_origin, "grid_origin"},
    {Builtin::grid_size, "grid_size"},
};
}  // namespace

const char* to_string(Builtin b) {
  for (const auto& [value, name] : kBuiltinNames)
    if (value == b) return name;
  return "none";
}

Builtin builtin_from_attribute(const std::string& attribute) {
  for (const auto& [value, name] : kBuiltinNames)
    if (attribute == name) return value;
  return Builtin::none;
}

const char* to_string(ScalarType s) {
  switch (s) {
    case ScalarType::boolean: return "bool";
    case ScalarType::i8: return "char";
    case ScalarType::u8: return "uchar";
    case ScalarType::i16: return "short";
    case ScalarType::u16: return "ushort";
    case ScalarType::i32: return "int";
    case ScalarType::u32: return "uint";
    case ScalarType::i64: return "long";
    case ScalarType::u64: return "ulong";
    case ScalarType::f16: return "half";
    case ScalarType::bf16: return "bfloat";
    case ScalarType::f32: return "float";
    case ScalarType::f64: return "double";
    case ScalarType::unknown: break;
  }
  return "unknown";
}

std::size_t scalar_size(ScalarType s) {
  switch (s) {
    case ScalarType::boolean:
    case ScalarType::i8:
    case ScalarType::u8: return 1;
    case ScalarType::i16:
    case ScalarType::u16:
    case ScalarType::f16:
    case ScalarType::bf16: return 2;
    case ScalarType::i32:
    case ScalarType::u32:
    case ScalarType::f32: return 4;
    case ScalarType::i64:
    case ScalarType::u64:
    case ScalarType::f64: return 8;
    case ScalarType::unknown: break;
  }
  return 0;
}

ScalarType scalar_type_from_name(const std::string& name) {
  static const auto& kNames = *new std::unordered_map<std::string, ScalarType>{
      {"bool", ScalarType::boolean},  {"char", ScalarType::i8},      {"int8_t", ScalarType::i8},
      {"uchar", ScalarType::u8},      {"uint8_t", ScalarType::u8},   {"short", ScalarType::i16},
      {"int16_t", ScalarType::i16},   {"ushort", ScalarType::u16},   {"uint16_t", ScalarType::u16},
      {"int", ScalarType::i32},       {"int32_t", ScalarType::i32},  {"uint", ScalarType::u32},
      {"uint32_t", ScalarType::u32},  {"unsigned", ScalarType::u32}, {"unsigned int", ScalarType::u32},
      {"long", ScalarType::i64},      {"int64_t", ScalarType::i64},  {"ulong", ScalarType::u64},
      {"uint64_t", ScalarType::u64},  {"size_t", ScalarType::u64},   {"half", ScalarType::f16},
      {"bfloat", ScalarType::bf16},   {"float", ScalarType::f32},    {"unsigned char", ScalarType::u8},
      {"unsigned short", ScalarType::u16}, {"unsigned long", ScalarType::u64},
      // MSL's ptrdiff_t (its spec's scalar types; size_t is above) and the C++ spellings of the others:
      // without them a `ptrdiff_t` parameter took no Python int and its arrays no element type check.
      {"ptrdiff_t", ScalarType::i64},      {"signed char", ScalarType::i8},     {"signed short", ScalarType::i16},
      {"short int", ScalarType::i16},      {"signed short int", ScalarType::i16},
      {"unsigned short int", ScalarType::u16}, {"signed", ScalarType::i32},    {"signed int", ScalarType::i32},
      {"long int", ScalarType::i64},       {"signed long", ScalarType::i64},    {"signed long int", ScalarType::i64},
      {"unsigned long int", ScalarType::u64},
  };
  auto it = kNames.find(name);
  return it == kNames.end() ? ScalarType::unknown : it->second;
}

// The component type of a matrix parameter (`float4x4`, `metal::half3x3`, `matrix<float, 4, 4>`), which
// reflection leaves without a scalar type (it is no vector): unknown for anything else. Without it a
// float64 array bound to `constant float4x4&` or `device float4x4*` was reinterpreted silently.
ScalarType matrix_component(const std::string& type_name) {
  std::string s;
  for (char c : type_name)
    if (c != ' ') s += c;
  if (s.rfind("metal::", 0) == 0) s = s.substr(7);
  if (s.rfind("matrix<", 0) == 0) {
    const std::size_t comma = s.find(',');
    if (comma == std::string::npos) return ScalarType::unknown;
    std::string component = s.substr(7, comma - 7);
    if (component.rfind("metal::", 0) == 0) component = component.substr(7);
    s = component + "2x2";  // checked as the spelled name below
  }
  for (const char* name : {"float", "half", "bfloat"}) {
    const std::size_t n = std::strlen(name);
    if (s.size() == n + 3 && s.compare(0, n, name) == 0 && s[n] >= '2' && s[n] <= '4' && s[n + 1] == 'x' &&
        s[n + 2] >= '2' && s[n + 2] <= '4')
      return name[0] == 'f' ? ScalarType::f32 : name[0] == 'h' ? ScalarType::f16 : ScalarType::bf16;
  }
  return ScalarType::unknown;
}

}  // namespace metalcall
