// Texture and sampler kernel parameters: what their MSL type says (texture kind,
// element type, access), for the signature parser.
#pragma once

#include <functional>
#include <string>

#include "metalcall/reflection.hpp"

namespace metalcall::msl {

/**
 * Classifies a parameter of type `type` (aliases resolved) as a texture or sampler when its
 * type is one: sets kind, texture_type, texture_access, scalar and is_const. `has_binding`: the
 * parameter carries an index attribute. Returns an error message, or "" when all is well
 * (also for parameters that are neither). `resolve` names the type a typedef or using alias
 * stands for: a texture's element type may be one (`typedef half ftype; texture2d<ftype>`).
 */
std::string classify_resource_param(const std::string& type, bool has_binding, ParamInfo& info,
                                    const std::function<std::string(const std::string&)>& resolve = {});

}  // namespace metalcall::msl
