// Binding a call's textures and samplers (core/texture.cpp) into its DispatchCommand.
#pragma once

#include "core/backend.hpp"
#include "metalcall/argument.hpp"

namespace metalcall {

/** Validates LaunchShape::textures/samplers against the kernel's [[texture(i)]]/[[sampler(i)]] parameters and binds them. */
void bind_textures(const KernelInfo& kernel, const LaunchShape& shape, bool borrow, const DeviceInfo& device,
                   DispatchCommand& command);
/** A command bound with borrow=true takes ownership of its textures' storage (queued work outlives the call). */
void own_textures(DispatchCommand& command);

}  // namespace metalcall
