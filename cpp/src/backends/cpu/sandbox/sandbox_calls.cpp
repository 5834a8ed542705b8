// Running a dispatch of the sandboxed CPU device (see sandbox_calls.hpp).
#include "backends/cpu/sandbox/sandbox_calls.hpp"

#include <cmath>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cpu/sandbox/sandbox_programs.hpp"
#include "backends/cpu/sandbox/sandbox_staging.hpp"
#include "core/interrupt.hpp"
#include "metalcall/errors.hpp"
#include "metalcall/interrupt.hpp"

namespace metalcall::cpu::sandbox {

namespace {

std::uint64_t grid_threads(const DispatchCommand& c) { return std::uint64_t(c.grid[0]) * c.grid[1] * c.grid[2]; }

// The arena offset of a Buffer's memory: its own range, or (memory of another CPU device,
// e.g. Device("cpu")'s: a Buffer belongs to the backend, not to one set of options) where
// staging copied it.
std::uint64_t buffer_offset(const BufferStorage& buffer, const Staging& staging) {
  if (const auto* storage = dynamic_cast<const ArenaStorage*>(&buffer)) return storage->offset();
  return staging.offset_of(buffer.data());
}

// Where each argument's memory is, as the worker will find it; stages what is not in the arena.
void write_call(MessageWriter& w, const SandboxProgram& program, const DispatchCommand& command, Staging& staging) {
  for (const BoundArgument& a : command.args) {
    if (a.buffer && !dynamic_cast<const ArenaStorage*>(a.buffer.get())) {
      if (!a.buffer->host_visible()) {
        throw ArgumentError("kernel '" + program.info().name + "': memory the host cannot read cannot be used on "
                            "the sandboxed CPU device");
      }
      staging.add(a.buffer->data(), a.buffer->nbytes(), a.written);
    } else if (!a.buffer && a.host_data) {
      staging.add(a.host_data, a.host_nbytes, a.written);
    }
  }
  for (const BoundArgument& a : command.args)  // the other textures of an array of textures
    for (const auto& more : a.more_buffers)
      if (!dynamic_cast<const ArenaStorage*>(more.get())) {
        if (!more->host_visible()) {
          throw ArgumentError("kernel '" + program.info().name + "': memory the host cannot read cannot be used on "
                              "the sandboxed CPU device");
        }
        staging.add(more->data(), more->nbytes(), a.written);
      }
  staging.copy_in();
  w.put(Op::call);
  w.put(program.id());
  for (auto g : command.grid) w.put<std::uint32_t>(g);
  for (auto t : command.threadgroup) w.put<std::uint32_t>(t);
  // The worker's environment is empty: this process's METALCALL_POISON_UNINITIALIZED travels here.
  w.put<std::uint8_t>(command.poison_threadgroup || poison_uninitialized() ? 1 : 0);
  w.put(static_cast<std::uint32_t>(command.args.size()));
  for (const BoundArgument& a : command.args) {
    w.put(static_cast<std::uint32_t>(a.kind));
    if (a.kind == ParamKind::texture && a.buffer) {
      // Each descriptor's texel (0, 0) as an offset into its storage (an array of N textures has
      // N descriptors, element 0 in `buffer`, the others in `more_buffers`).
      const std::size_t count = 1 + a.more_buffers.size(), stride = a.bytes.size() / count;
      auto texel_offset = [&](std::size_t k, const BufferStorage& storage) {
        void* texel = nullptr;
        if (stride >= sizeof texel) std::memcpy(&texel, a.bytes.data() + k * stride, sizeof texel);
        const auto* base = static_cast<const unsigned char*>(storage.data());
        const auto* first = static_cast<const unsigned char*>(texel);
        if (first < base || first > base + storage.nbytes()) {
          throw ArgumentError("kernel '" + program.info().name + "': a texture's first texel lies outside its memory");
        }
        return static_cast<std::uint64_t>(first - base);
      };
      w.put(ArgPlace::texture);
      w.put<std::uint64_t>(buffer_offset(*a.buffer, staging));
      w.put<std::uint64_t>(a.buffer->nbytes());
      w.put<std::uint64_t>(texel_offset(0, *a.buffer));
      w.put<std::uint64_t>(a.bytes.size());
      w.put_bytes(a.bytes.data(), a.bytes.size());
      w.put<std::uint32_t>(static_cast<std::uint32_t>(a.more_buffers.size()));
      for (std::size_t k = 1; k < count; ++k) {
        const BufferStorage& more = *a.more_buffers[k - 1];
        w.put<std::uint64_t>(buffer_offset(more, staging));
        w.put<std::uint64_t>(more.nbytes());
        w.put<std::uint64_t>(texel_offset(k, more));
      }
    } else if (a.buffer) {
      w.put(ArgPlace::arena);
      w.put<std::uint64_t>(buffer_offset(*a.buffer, staging) + a.offset);  // a view of a Buffer: from its offset
      w.put<std::uint64_t>(a.memory_nbytes());
    } else if (a.host_data) {
      w.put(ArgPlace::arena);
      w.put<std::uint64_t>(staging.offset_of(a.host_data));
      w.put<std::uint64_t>(a.host_nbytes);
    } else if (a.kind == ParamKind::threadgroup_memory) {
      w.put(ArgPlace::threadgroup);
      w.put<std::uint64_t>(0);
      w.put<std::uint64_t>(a.threadgroup_length);
    } else if (a.bytes.empty()) {
      w.put(ArgPlace::none);
      w.put<std::uint64_t>(0);
      w.put<std::uint64_t>(0);
    } else if (a.bytes.size() <= kInlineArgumentBytes) {
      w.put(ArgPlace::inline_bytes);
      w.put<std::uint64_t>(0);
      w.put<std::uint64_t>(a.bytes.size());
      w.put_bytes(a.bytes.data(), a.bytes.size());
    } else {
      w.put(ArgPlace::arena);
      w.put<std::uint64_t>(staging.copy_of(a.bytes.data(), a.bytes.size()));
      w.put<std::uint64_t>(a.bytes.size());
    }
  }
  if (!w.ok()) {
    throw ArgumentError("kernel '" + program.info().name + "': the call's arguments do not fit in a sandbox request (" +
                        std::to_string(command.args.size()) + " arguments)");
  }
}

// How long to spin for a call's reply: long enough for a short call's round trip (a
// sleeping caller wakes late on a busy machine), not for long calls, whose workers the
// spinning caller would slow down.
std::chrono::microseconds spin_for(const CallEstimate& e) {
  if (!e.measured) return WorkerLink::kDefaultSpin;
  const double us = e.wall_ns * 3e-3 + 20;
  return std::chrono::microseconds(us > 1000 ? 0 : static_cast<long>(us));
}

}  // namespace

CallEstimate SandboxRunner::estimate(const DispatchCommand& command) {
  const auto& program = static_cast<const SandboxProgram&>(*command.program);
  CallEstimate e;
  e.threads = grid_threads(command);
  const double per_thread = program.ns_per_thread();
  if (per_thread >= 0) {
    e.measured = true;
    e.wall_ns = per_thread * double(e.threads);
  }
  return e;
}

double SandboxRunner::run(const DispatchCommand& command, const StopRequest& stop) {
  auto& program = static_cast<SandboxProgram&>(*command.program);
  const std::string& name = program.info().name;
  Staging staging(*arena_);
  Reply reply;
  {
    std::lock_guard<std::mutex> lock(link_->mutex());
    try {
      link_->ensure_worker();
      link_->send_releases();
      program.make_ready(*link_);
      MessageWriter w = link_->request();
      write_call(w, program, command, staging);
      const auto deadline = stop.timeout_seconds > 0
                                ? std::chrono::steady_clock::now() +
                                      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                          std::chrono::duration<double>(stop.timeout_seconds))
                                : std::chrono::steady_clock::time_point::max();
      reply = link_->exchange(w.used(), stop.cancel, true, spin_for(estimate(command)), deadline);
    } catch (const WorkerLost& lost) {
      staging.copy_out();  // what it wrote so far stays, as in Buffers
      if (lost.stopped) {
        throw ExecutionError("[cpu sandbox] kernel '" + name + "' was stopped (cancelled, interrupted or out of "
                             "time) before it finished; what it wrote so far stays. Its worker process was ended and "
                             "a new one takes the next call");
      }
      throw ExecutionError("[cpu sandbox] kernel '" + name + "' " + lost.why +
                           ": the sandbox's worker process ended, the interpreter and the Buffers are unharmed, and "
                           "a new worker takes the next call");
    }
  }
  // In-process, a kernel writes host memory in place: what it wrote stays when it faults too.
  staging.copy_out();
  // Stopped for this thread's Ctrl-C (its InterruptScope): the interruption is the news, as in-process.
  if (reply.status == Status::execution_error && interrupt_check_installed() && interrupt_requested()) throw Interrupted();
  if (reply.status == Status::execution_error) throw ExecutionError(reply.message);  // names the kernel (cpu_dispatch.cpp)
  if (reply.status != Status::ok) throw DeviceError("[cpu sandbox] kernel '" + name + "': " + reply.message);
  if (const std::uint64_t threads = grid_threads(command); threads && std::isfinite(reply.seconds)) {
    program.record_ns_per_thread(reply.seconds * 1e9 / double(threads));
  }
  return std::isfinite(reply.seconds) ? reply.seconds : 0.0;
}

}  // namespace metalcall::cpu::sandbox
