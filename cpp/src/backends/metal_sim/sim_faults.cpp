// Faults the Metal simulator injects on request (sim_command_buffer.hpp), so that tests reach the
// paths a real GPU takes only when something goes wrong: a lost GPU, a failing copy-back or
// release at completion (P2.1 items 7 and 10), a plan whose passes are merged, which the
// simulator must refuse when it breaks Metal's texture-over-buffer rule (P2.1 item 3), and a
// submission held between core marking its Buffers and the queue taking it (P2.1 item 11).
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "backends/metal_sim/sim_command_buffer.hpp"
#include "metalcall/errors.hpp"

namespace metalcall::metal_sim {

Fault fault_from_environment() {
  const char* env = std::getenv("METALCALL_METAL_SIM_FAULT");
  const std::string name = env ? env : "";
  Fault fault;
  using K = Fault::Kind;
  using G = metal::GpuFailure;
  static const std::pair<const char*, std::pair<K, G>> kNames[] = {
      {"", {K::none, G::other}},
      {"merge-passes", {K::merge_passes, G::other}},
      {"copy-back", {K::copy_back, G::other}},
      {"release", {K::release, G::other}},
      {"slow-submit", {K::slow_submit, G::other}},
      {"gpu", {K::gpu, G::other}},
      {"gpu:page-fault", {K::gpu, G::page_fault}},
      {"gpu:timeout", {K::gpu, G::timeout}},
      {"gpu:out-of-memory", {K::gpu, G::out_of_memory}},
      {"gpu:not-permitted", {K::gpu, G::not_permitted}},
      {"gpu:removed", {K::gpu, G::device_removed}},
  };
  std::string known;
  for (const auto& [text, kind] : kNames) {
    if (name == text) {
      fault.kind = kind.first;
      fault.gpu = kind.second;
      return fault;
    }
    if (*text) known += std::string(known.empty() ? "" : ", ") + text;
  }
  throw DeviceError("[metal-sim] METALCALL_METAL_SIM_FAULT='" + name + "' names no fault; use one of " + known +
                    ", or unset it");
}

void hold_first_submission() {
  static std::atomic<int> held{0};
  if (held.fetch_add(1) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  held.fetch_sub(1);
}

void merge_compute_passes(metal::Plan& plan) {
  std::vector<metal::Step> merged;
  bool in_compute = false;
  for (metal::Step& step : plan.steps) {
    const bool begins_compute = std::holds_alternative<metal::BeginCompute>(step);
    if (begins_compute && !merged.empty() && std::holds_alternative<metal::EndPass>(merged.back()) && in_compute) {
      merged.pop_back();  // the compute pass before goes on
      continue;
    }
    if (begins_compute) in_compute = true;
    if (std::holds_alternative<metal::BeginBlit>(step)) in_compute = false;
    merged.push_back(std::move(step));
  }
  plan.steps = std::move(merged);
}

}  // namespace metalcall::metal_sim
