// Built-in inputs that must agree (see builtin_agreement.hpp).
#include "msl/parse/builtin_agreement.hpp"

namespace metalcall::msl {

namespace {

// The specification's list: "the type for declaring [[thread_position_in_grid]],
// [[threads_per_grid]], [[thread_position_in_threadgroup]], [[threads_per_threadgroup]],
// [[threadgroup_position_in_grid]], [[dispatch_threads_per_threadgroup]], and
// [[threadgroups_per_grid]] needs to be a scalar type or a vector type [whose] number of
// components ... need to match". Not grid_origin and grid_size, nor the scalar indices and counts.
bool is_position_or_size(Builtin b) {
  switch (b) {
    case Builtin::thread_position_in_grid:
    case Builtin::threads_per_grid:
    case Builtin::thread_position_in_threadgroup:
    case Builtin::threads_per_threadgroup:
    case Builtin::threadgroup_position_in_grid:
    case Builtin::dispatch_threads_per_threadgroup:
    case Builtin::threadgroups_per_grid:
      return true;
    default:
      return false;
  }
}

std::string attribute_name(Builtin b) { return std::string("[[") + to_string(b) + "]]"; }

}  // namespace

void check_builtin_agreement(const std::vector<Token>& t, const std::string& source,
                             const std::vector<ParsedParam>& params) {
  const ParsedParam* first_position = nullptr;
  const ParsedParam* simd_width = nullptr;
  for (const ParsedParam& p : params) {
    const Builtin b = p.info.builtin;
    if (p.info.kind != ParamKind::builtin) continue;
    if (is_position_or_size(b)) {
      if (!first_position) {
        first_position = &p;
      } else if (p.info.builtin_width != first_position->info.builtin_width) {
        throw rule_error(source, t[p.name_token],
                         attribute_name(b) + " '" + p.info.name + "' is declared '" + p.info.type_name + "' but " +
                             attribute_name(first_position->info.builtin) + " '" + first_position->info.name +
                             "' (line " + std::to_string(first_position->info.line) + ") '" +
                             first_position->info.type_name +
                             "': a kernel's position and size inputs are all scalars or all vectors with the same "
                             "number of components (Metal: \"expecting input declarations with either all scalar "
                             "types or all vector types with the same number of elements\")",
                         "kernel inputs agree");
      }
    }
    if (b == Builtin::thread_execution_width || b == Builtin::threads_per_simdgroup) {
      if (simd_width && simd_width->info.builtin != b)
        throw rule_error(source, t[p.name_token],
                         "a kernel declares [[thread_execution_width]] or [[threads_per_simdgroup]], not both ('" +
                             simd_width->info.name + "' and '" + p.info.name +
                             "'): they are one value, and Metal's compiler refuses the pair",
                         "kernel inputs agree");
      simd_width = &p;
    }
  }
}

}  // namespace metalcall::msl
