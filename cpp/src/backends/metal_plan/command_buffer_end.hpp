// How both Metal drivers end a command buffer: the Objective-C++ one (metal_queue.mm, in a Metal
// completion handler) and the simulator (sim_driver.cpp, on its queue thread). Plain C++, so the
// simulator exercises exactly what a Mac runs (P2.1 items 7 and 10).
#pragma once

#include <exception>
#include <string>
#include <vector>

#include "core/backend.hpp"

namespace metalcall::metal {

/**
 * Ends one submission: `outcome()` (throws when the GPU failed; copies host memory back; returns
 * the GPU's seconds), then `release()` (the submission's buffers, pipelines and pooled staging),
 * then finishes `completion`. Each step runs whatever the one before threw; the first error is
 * the Completion's; nothing leaves (an exception out of a Metal completion handler ends the
 * process, and a waiter must hear of the end, or synchronize() waits forever: P2.1 item 7).
 */
template <class Outcome, class Release>
void finish_submission(CompletionState& completion, Outcome&& outcome, Release&& release) noexcept {
  std::exception_ptr error;
  double seconds = 0;
  try {
    seconds = outcome();
  } catch (...) {
    error = std::current_exception();
  }
  try {
    release();
  } catch (...) {
    if (!error) error = std::current_exception();
  }
  try {
    completion.finish(error, error ? 0.0 : seconds);
  } catch (...) {
  }
}

/**
 * A submission that never reached the GPU, from inside the catch block of the error that stopped
 * it: releases it and finishes `completion` with that error (so that no one waits on it forever),
 * whatever the release throws. The caller rethrows.
 */
template <class Release>
void abandon_submission(CompletionState& completion, Release&& release) noexcept {
  const std::exception_ptr error = std::current_exception();
  try {
    release();
  } catch (...) {
  }
  try {
    completion.finish(error, 0.0);
  } catch (...) {
  }
}

/** Why a command buffer failed, as MTLCommandBufferError codes sort it. */
enum class GpuFailure { page_fault, invalid_resource, timeout, out_of_memory, not_permitted, device_removed, other };

/**
 * The ExecutionError text for a command buffer the GPU failed: which kernel (or batch) ran,
 * Metal's own description, and what to do next. Devices stay open for the whole process, so a
 * lost GPU is never "open the device again" (P2.1 item 10). `scope` starts it ("[metal]").
 */
std::string gpu_failure_text(const std::vector<DispatchCommand>& commands, const std::string& description,
                             GpuFailure failure, const std::string& scope);

/** The ExecutionError text when Metal gives no command buffer or encoder (the GPU was reset or removed). */
std::string unable_to_start_text(const std::string& what, const std::string& device, const std::string& scope);

}  // namespace metalcall::metal
