// A self-checking test of metalcall's public C++ API on the CPU backend, built
// against the installed package (find_package(metalcall)); see run.sh.
// Prints one line per failed check and "N passed, M failed"; exits 1 on failure.
#include <metalcall/metalcall.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using metalcall::Argument;
using metalcall::Buffer;
using metalcall::Completion;
using metalcall::Device;
using metalcall::FunctionConstant;
using metalcall::Kernel;
using metalcall::LaunchShape;
using metalcall::Library;

namespace {

int g_passed = 0;
int g_failed = 0;

// One named test; a failed CHECK or an unexpected exception fails it.
struct Failure {
  std::string what;
};

#define CHECK(cond)                                                                              \
  do {                                                                                           \
    if (!(cond)) throw Failure{std::string(__FILE__ ":") + std::to_string(__LINE__) + ": " #cond}; \
  } while (0)

// Runs `body`, which must throw `E`; returns the exception for further checks.
template <class E>
E expect_throw(const std::function<void()>& body, const char* what) {
  try {
    body();
  } catch (const E& e) {
    return e;
  } catch (const std::exception& e) {
    throw Failure{std::string(what) + ": threw the wrong exception: " + e.what()};
  }
  throw Failure{std::string(what) + ": did not throw"};
}

void run(const char* name, const std::function<void()>& body) {
  try {
    body();
    ++g_passed;
    return;
  } catch (const Failure& f) {
    std::printf("FAIL %s: %s\n", name, f.what.c_str());
  } catch (const std::exception& e) {
    std::printf("FAIL %s: unexpected exception: %s\n", name, e.what());
  } catch (...) {
    std::printf("FAIL %s: unexpected non-standard exception\n", name);
  }
  ++g_failed;
}

LaunchShape grid(std::uint64_t x, std::uint64_t y = 1, std::uint64_t z = 1) {
  LaunchShape s;
  s.grid[0] = x;
  s.grid[1] = y;
  s.grid[2] = z;
  return s;
}

template <class T>
Buffer buffer_of(const Device& d, const std::vector<T>& values) {
  Buffer b = d.allocate(values.size() * sizeof(T));
  std::memcpy(b.host_data(), values.data(), values.size() * sizeof(T));
  return b;
}

template <class T>
std::vector<T> read(const Buffer& b) {
  std::vector<T> out(b.nbytes() / sizeof(T));
  std::memcpy(out.data(), b.host_data(), out.size() * sizeof(T));
  return out;
}

const char* kSource = R"msl(
#include <metal_stdlib>
using namespace metal;

kernel void mul(const device float* a [[buffer(0)]],
                const device float* b [[buffer(1)]],
                device float* c [[buffer(2)]],
                uint i [[thread_position_in_grid]]) {
    c[i] = a[i] * b[i];
}

kernel void add_n(device uint* out [[buffer(0)]],
                  constant uint& n [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
    out[i] = i + n;
}

kernel void grid2d(device uint* out [[buffer(0)]],
                   uint2 p [[thread_position_in_grid]],
                   uint2 size [[threads_per_grid]]) {
    out[p.y * size.x + p.x] = p.y * 1000 + p.x;
}
)msl";

const char* kCopySource = R"msl(
kernel void copy_u32(const device uint* in [[buffer(0)]],
                     device uint* out [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
    out[i] = in[i];
}
)msl";

const char* kConstantsSource = R"msl(
#include <metal_stdlib>
using namespace metal;

constant float scale [[function_constant(0)]];
constant int offset [[function_constant(1)]];
constant bool has_offset = is_function_constant_defined(offset);

kernel void scaled(const device float* in [[buffer(0)]],
                   device float* out [[buffer(1)]],
                   uint i [[thread_position_in_grid]]) {
    float y = in[i] * scale;
    if (has_offset) y += float(offset);
    out[i] = y;
}
)msl";

// A buffer that exists only when has_bias is true (docs/design.md: None, or left off the end).
const char* kOptionalSource = R"msl(
#include <metal_stdlib>
using namespace metal;

constant bool has_bias [[function_constant(0)]];

kernel void biased(const device float* in [[buffer(0)]],
                   device float* out [[buffer(1)]],
                   const device float* bias [[buffer(2), function_constant(has_bias)]],
                   uint i [[thread_position_in_grid]]) {
    out[i] = has_bias ? in[i] + bias[i] : in[i];
}
)msl";

// The unknown name is on line 5, column 12.
const char* kBadSource = R"msl(#include <metal_stdlib>
using namespace metal;
kernel void broken(device float* a [[buffer(0)]],
                   uint i [[thread_position_in_grid]]) {
    a[i] = undefined_name * 2.0f;
}
)msl";

const char* kOutOfBoundsSource = R"msl(
kernel void overrun(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    a[i + 100] = 1.0f;
}
)msl";

}  // namespace

int main() {
  Device dev;
  Library lib;

  run("version", [] {
    const std::string v = metalcall::version();
    CHECK(!v.empty() && v[0] >= '0' && v[0] <= '9');
    CHECK(v == METALCALL_VERSION);
  });

  run("backends and device list", [] {
    const auto backends = Device::backends();
    bool has_cpu = false;
    for (const auto& b : backends) has_cpu = has_cpu || b == "cpu";
    CHECK(has_cpu);
    bool listed = false;
    for (const auto& info : Device::list()) listed = listed || info.backend == "cpu";
    CHECK(listed);
  });

  run("open cpu", [&] {
    dev = Device::open("cpu");
    CHECK(static_cast<bool>(dev.impl()));
    CHECK(dev.info().backend == "cpu");
    CHECK(!dev.info().name.empty());
    CHECK(dev.info().max_threads_per_threadgroup > 0);
    CHECK(!dev.options().checked);
  });
  if (!dev.impl()) {
    std::printf("%d passed, %d failed (no CPU device: nothing else can run)\n", g_passed, g_failed + 1);
    return 1;
  }

  run("compile and reflect", [&] {
    lib = dev.compile(kSource);
    const auto names = lib.function_names();
    CHECK(names.size() == 3);
    CHECK(lib.has_function("mul") && lib.has_function("add_n") && !lib.has_function("nope"));
    Kernel mul = lib.function("mul");
    CHECK(mul.name() == "mul");
    const auto params = mul.info().buffer_params();
    CHECK(params.size() == 3);
    CHECK(params[0]->name == "a" && params[0]->binding == 0 && params[0]->is_const);
    CHECK(params[2]->name == "c" && params[2]->binding == 2 && !params[2]->is_const);
    CHECK(params[2]->scalar == metalcall::ScalarType::f32);
    CHECK(mul.info().max_total_threads_per_threadgroup > 0);
  });

  run("compile is cached by content", [&] {
    Library again = dev.compile(kSource);
    CHECK(again.impl() == lib.impl());
  });

  run("call with Buffers", [&] {
    const std::size_t n = 1000;
    std::vector<float> a(n), b(n);
    for (std::size_t i = 0; i < n; ++i) {
      a[i] = static_cast<float>(i) * 0.25f;
      b[i] = 3.0f - static_cast<float>(i % 7);
    }
    Buffer ba = buffer_of(dev, a), bb = buffer_of(dev, b), bc = dev.allocate(n * sizeof(float));
    CHECK(bc.nbytes() == n * sizeof(float));
    Completion done = lib.function("mul")(grid(n), {Argument::from_buffer(ba), Argument::from_buffer(bb),
                                                   Argument::from_buffer(bc)});
    CHECK(done.submitted());
    done.wait();
    CHECK(done.done());
    CHECK(done.gpu_time() >= 0.0);
    const auto c = read<float>(bc);
    for (std::size_t i = 0; i < n; ++i) CHECK(c[i] == a[i] * b[i]);
  });

  run("call with host memory", [&] {
    const std::size_t n = 257;  // not a multiple of any threadgroup size
    std::vector<float> a(n), b(n), c(n, -1.0f);
    for (std::size_t i = 0; i < n; ++i) {
      a[i] = static_cast<float>(i);
      b[i] = -2.0f;
    }
    // Host memory is used in place; the call returns after it is written back.
    lib.function("mul")(grid(n), {
        Argument::from_host(a.data(), n * sizeof(float), false, metalcall::ScalarType::f32, false),
        Argument::from_host(b.data(), n * sizeof(float), false, metalcall::ScalarType::f32, false),
        Argument::from_host(c.data(), n * sizeof(float), true, metalcall::ScalarType::f32, false)});
    for (std::size_t i = 0; i < n; ++i) CHECK(c[i] == a[i] * b[i]);
  });

  run("host memory of the wrong element type", [&] {
    std::vector<std::int32_t> a(4), b(4), c(4);
    expect_throw<metalcall::ArgumentError>([&] {
      lib.function("mul")(grid(4), {
          Argument::from_host(a.data(), 16, false, metalcall::ScalarType::i32, false),
          Argument::from_host(b.data(), 16, false, metalcall::ScalarType::i32, false),
          Argument::from_host(c.data(), 16, true, metalcall::ScalarType::i32, false)});
    }, "int32 host data for float*");
  });

  run("read-only host memory for a written parameter", [&] {
    std::vector<float> a(4), b(4), c(4);
    expect_throw<metalcall::ArgumentError>([&] {
      lib.function("mul")(grid(4), {Argument::from_host(a.data(), 16, false), Argument::from_host(b.data(), 16, false),
                                    Argument::from_host(c.data(), 16, /*writable=*/false)});
    }, "read-only output");
  });

  run("scalar packing: constant uint&", [&] {
    const std::size_t n = 64;
    Buffer out = dev.allocate(n * sizeof(std::uint32_t));
    lib.function("add_n")(grid(n), {Argument::from_buffer(out), Argument::from_uint(4000000000u)}).wait();
    auto values = read<std::uint32_t>(out);
    for (std::size_t i = 0; i < n; ++i) CHECK(values[i] == 4000000000u + i);
    // A signed integer that fits is packed too.
    lib.function("add_n")(grid(n), {Argument::from_buffer(out), Argument::from_int(7)}).wait();
    values = read<std::uint32_t>(out);
    for (std::size_t i = 0; i < n; ++i) CHECK(values[i] == 7 + i);
    // Bytes of exactly the declared size.
    const std::uint32_t three = 3;
    lib.function("add_n")(grid(n), {Argument::from_buffer(out), Argument::from_bytes(&three, sizeof three)}).wait();
    values = read<std::uint32_t>(out);
    for (std::size_t i = 0; i < n; ++i) CHECK(values[i] == 3 + i);
  });

  run("scalar packing refuses what does not fit", [&] {
    Buffer out = dev.allocate(16);
    Kernel add_n = lib.function("add_n");
    expect_throw<metalcall::ArgumentError>(
        [&] { add_n(grid(4), {Argument::from_buffer(out), Argument::from_float(1.5)}); }, "float to uint");
    expect_throw<metalcall::ArgumentError>(
        [&] { add_n(grid(4), {Argument::from_buffer(out), Argument::from_int(-1)}); }, "negative to uint");
    expect_throw<metalcall::ArgumentError>(
        [&] { add_n(grid(4), {Argument::from_buffer(out), Argument::from_uint(1ull << 40)}); }, "2^40 to uint");
    const std::uint64_t eight_bytes = 1;
    expect_throw<metalcall::ArgumentError>(
        [&] { add_n(grid(4), {Argument::from_buffer(out), Argument::from_bytes(&eight_bytes, 8)}); }, "8 bytes to uint");
  });

  run("2-D grid", [&] {
    const std::size_t w = 33, h = 5;
    Buffer out = dev.allocate(w * h * sizeof(std::uint32_t));
    lib.function("grid2d")(grid(w, h), {Argument::from_buffer(out)}).wait();
    const auto values = read<std::uint32_t>(out);
    for (std::size_t y = 0; y < h; ++y)
      for (std::size_t x = 0; x < w; ++x) CHECK(values[y * w + x] == y * 1000 + x);
  });

  run("explicit threadgroup size; over the limit is an error", [&] {
    const std::size_t n = 100;
    Buffer out = dev.allocate(n * sizeof(std::uint32_t));
    LaunchShape shape = grid(n);
    shape.threadgroup[0] = 16;  // the last threadgroup is partial
    shape.threadgroup[1] = shape.threadgroup[2] = 1;
    lib.function("add_n")(shape, {Argument::from_buffer(out), Argument::from_uint(0)}).wait();
    const auto values = read<std::uint32_t>(out);
    for (std::size_t i = 0; i < n; ++i) CHECK(values[i] == i);
    Kernel add_n = lib.function("add_n");
    shape.threadgroup[0] = add_n.info().max_total_threads_per_threadgroup + 1;
    expect_throw<metalcall::ArgumentError>(
        [&] { add_n(shape, {Argument::from_buffer(out), Argument::from_uint(0)}); }, "threadgroup over the limit");
  });

  run("Device::copy and wrap", [&] {
    const std::vector<float> values = {1.5f, -2.0f, 3.25f};
    Buffer a = buffer_of(dev, values);
    Buffer c = dev.copy(a);  // always a new Buffer, even on the same device
    CHECK(c.data() != a.data() && c.nbytes() == a.nbytes() && c.host_visible());
    CHECK(read<float>(c) == values);
    std::vector<float> host = {4.0f, 5.0f};
    Buffer w = dev.wrap(host.data(), host.size() * sizeof(float), nullptr);
    CHECK(w.data() == host.data() && w.host_visible());
    CHECK(dev.stream_handle() == 0);  // the CPU queue has no native stream
    expect_throw<metalcall::ArgumentError>([&] { dev.copy(Buffer()); }, "copy of an empty Buffer");
  });

  run("a read-only wrap binds to const parameters only", [&] {
    std::vector<float> host = {2.0f, 3.0f, 4.0f, 5.0f};
    Buffer r = dev.wrap(host.data(), host.size() * sizeof(float), nullptr, /*read_only=*/true);
    CHECK(r.read_only() && !dev.allocate(16).read_only());
    Buffer out = dev.allocate(host.size() * sizeof(float));
    Kernel mul = lib.function("mul");
    mul(grid(4), {Argument::from_buffer(r), Argument::from_buffer(r), Argument::from_buffer(out)}).wait();
    CHECK((read<float>(out) == std::vector<float>{4.0f, 9.0f, 16.0f, 25.0f}));
    expect_throw<metalcall::ArgumentError>(
        [&] { mul(grid(4), {Argument::from_buffer(out), Argument::from_buffer(out), Argument::from_buffer(r)}); },
        "a read-only Buffer for a written parameter");
    expect_throw<metalcall::ArgumentError>([&] { r.copy_from_host(host.data(), 4); }, "a host write into read-only memory");
    CHECK((host == std::vector<float>{2.0f, 3.0f, 4.0f, 5.0f}));
  });

  run("Buffer::copy_from_host", [&] {
    const std::vector<float> values = {0.5f, 7.0f, -1.25f};
    Buffer b = dev.allocate(4 * sizeof(float));
    b.copy_from_host(values.data(), values.size() * sizeof(float));
    CHECK((read<float>(b) == std::vector<float>{0.5f, 7.0f, -1.25f, 0.0f}));  // the rest stays zero
    expect_throw<metalcall::ArgumentError>([&] { b.copy_from_host(values.data(), 5 * sizeof(float)); },
                                           "a write past the end");
    expect_throw<metalcall::ArgumentError>([&] { Buffer().copy_from_host(values.data(), 4); },
                                           "a write into an empty Buffer");
  });

  run("wrong argument count is ArgumentError", [&] {
    Buffer a = dev.allocate(16);
    const auto e = expect_throw<metalcall::ArgumentError>(
        [&] { lib.function("mul")(grid(4), {Argument::from_buffer(a), Argument::from_buffer(a)}); }, "2 of 3");
    CHECK(std::string(e.what()).find("takes 3 argument") != std::string::npos);
    expect_throw<metalcall::ArgumentError>([&] { lib.function("mul")(grid(4), {}); }, "0 of 3");
  });

  run("a scalar for a pointer, an empty Buffer", [&] {
    Buffer a = dev.allocate(16);
    expect_throw<metalcall::ArgumentError>([&] {
      lib.function("mul")(grid(4), {Argument::from_buffer(a), Argument::from_float(1), Argument::from_buffer(a)});
    }, "scalar for pointer");
    expect_throw<metalcall::ArgumentError>([&] {
      lib.function("mul")(grid(4), {Argument::from_buffer(a), Argument::from_buffer(Buffer()), Argument::from_buffer(a)});
    }, "empty Buffer");
  });

  run("missing kernel is ArgumentError", [&] {
    expect_throw<metalcall::ArgumentError>([&] { lib.function("no_such_kernel"); }, "missing kernel");
  });

  run("bad MSL is CompileError at the right line", [&] {
    const auto e = expect_throw<metalcall::CompileError>([&] { dev.compile(kBadSource); }, "bad MSL");
    CHECK(e.line() == 5);
    CHECK(e.column() == 12);
    CHECK(e.source_line() == "    a[i] = undefined_name * 2.0f;");
    CHECK(!e.log().empty());
    CHECK(std::string(e.what()).find("undefined_name") != std::string::npos);
    // The device stays usable after a failed compile.
    CHECK(dev.compile(kSource).has_function("mul"));
  });

  run("unknown device is DeviceError", [] {
    const auto e = expect_throw<metalcall::DeviceError>([] { Device::open("no_such_backend"); }, "unknown device");
    CHECK(std::string(e.what()).find("no_such_backend") != std::string::npos);
    expect_throw<metalcall::DeviceError>([] { Device::open("cpu:99"); }, "cpu:99");
    expect_throw<metalcall::DeviceError>([] { Device::open(100000); }, "index 100000");
  });

  run("every error is a metalcall::Error", [&] {
    expect_throw<metalcall::Error>([] { Device::open("no_such_backend"); }, "DeviceError as Error");
    expect_throw<metalcall::Error>([&] { dev.compile(kBadSource); }, "CompileError as Error");
    expect_throw<metalcall::Error>([&] { lib.function("mul")(grid(1), {}); }, "ArgumentError as Error");
  });

  run("batch", [&] {
    const std::size_t n = 128;
    std::vector<float> ones(n, 1.0f), twos(n, 2.0f);
    Buffer a = buffer_of(dev, ones), b = buffer_of(dev, twos);
    Buffer c = dev.allocate(n * sizeof(float)), d = dev.allocate(n * sizeof(float));
    Kernel mul = lib.function("mul");
    metalcall::Batch batch = dev.begin_batch();
    Completion first = mul(grid(n), {Argument::from_buffer(a), Argument::from_buffer(b), Argument::from_buffer(c)});
    // Uses c, written by the first call: the batch runs its calls in order.
    Completion second = mul(grid(n), {Argument::from_buffer(c), Argument::from_buffer(b), Argument::from_buffer(d)});
    CHECK(batch.size() == 2);
    CHECK(!first.submitted() && !second.submitted());
    expect_throw<metalcall::ArgumentError>([&] { first.wait(); }, "waiting on a recorded call");
    expect_throw<metalcall::ArgumentError>([&] { dev.begin_batch(); }, "nested batch");
    Completion all = batch.commit();
    all.wait();
    CHECK(first.done() && second.done());
    for (float v : read<float>(c)) CHECK(v == 2.0f);
    for (float v : read<float>(d)) CHECK(v == 4.0f);
    expect_throw<metalcall::ArgumentError>([&] { batch.commit(); }, "second commit");
  });

  run("batch discard runs nothing", [&] {
    const std::size_t n = 16;
    Buffer out = dev.allocate(n * sizeof(std::uint32_t));
    metalcall::Batch batch = dev.begin_batch();
    lib.function("add_n")(grid(n), {Argument::from_buffer(out), Argument::from_uint(9)});
    CHECK(batch.size() == 1);
    batch.discard();
    for (auto v : read<std::uint32_t>(out)) CHECK(v == 0);
    // Calls after the batch run at once again.
    lib.function("add_n")(grid(n), {Argument::from_buffer(out), Argument::from_uint(9)}).wait();
    CHECK(read<std::uint32_t>(out)[3] == 12);
  });

  run("kernel device and the current batch", [&] {
    Kernel mul = lib.function("mul");
    CHECK(mul.device().impl() == dev.impl());
    CHECK(!dev.current_batch());  // none open
    metalcall::DeviceOptions checked_options;
    checked_options.checked = true;
    Device other = Device::open("cpu", checked_options);  // another device
    metalcall::Batch batch = dev.begin_batch();
    // Looked at before the commit, checked after it: a failed check leaves no batch open.
    const bool is_current = static_cast<bool>(batch) && dev.current_batch().impl() == batch.impl();
    bool other_thread_sees_one = true;  // batches are per thread…
    std::thread([&] { other_thread_sees_one = static_cast<bool>(dev.current_batch()); }).join();
    const bool other_device_has_one = static_cast<bool>(other.current_batch());  // …and per device
    batch.commit();
    CHECK(is_current);
    CHECK(!other_thread_sees_one);
    CHECK(!other_device_has_one);
    CHECK(!dev.current_batch());
  });

  run("batch keep-alives hold host memory until the commit", [&] {
    const std::size_t n = 64;
    Buffer out = dev.allocate(n * sizeof(std::uint32_t));
    Kernel copy = dev.compile(kCopySource).function("copy_u32");
    std::weak_ptr<std::vector<std::uint32_t>> watch;
    metalcall::Batch batch = dev.begin_batch();
    {
      // The caller lets go of its input right after the call; the batch keeps it.
      auto input = std::make_shared<std::vector<std::uint32_t>>(n);
      for (std::size_t i = 0; i < n; ++i) (*input)[i] = static_cast<std::uint32_t>(3 * i);
      watch = input;
      copy(grid(n), {Argument::from_host(input->data(), n * sizeof(std::uint32_t), false, metalcall::ScalarType::u32,
                                         false),
                     Argument::from_buffer(out)});
      dev.current_batch().keep_alive(input);
    }
    CHECK(!watch.expired());
    Completion done = batch.commit();
    CHECK(done.done());  // commit() waited: the keep-alive's memory is free to go
    const auto values = read<std::uint32_t>(out);
    for (std::size_t i = 0; i < n; ++i) CHECK(values[i] == 3 * i);
    expect_throw<metalcall::ArgumentError>([&] { batch.keep_alive(std::make_shared<int>(0)); }, "after commit");
    CHECK(!watch.expired());  // held until the last handle on the batch goes
    batch = metalcall::Batch();
    CHECK(watch.expired());
  });

  run("record once, replay, update", [&] {
    const std::size_t n = 32;
    std::vector<std::uint32_t> a(n), b(n);
    for (std::size_t i = 0; i < n; ++i) {
      a[i] = static_cast<std::uint32_t>(i);
      b[i] = static_cast<std::uint32_t>(100 + i);
    }
    Buffer in_a = buffer_of(dev, a), in_b = buffer_of(dev, b), out = dev.allocate(n * sizeof(std::uint32_t));
    Kernel copy = dev.compile(kCopySource).function("copy_u32");
    metalcall::Batch recording = dev.begin_recording();
    CHECK(recording.recording());
    Completion recorded = copy(grid(n), {Argument::from_buffer(in_a), Argument::from_buffer(out)});
    expect_throw<metalcall::ArgumentError>([&] { dev.begin_batch(); }, "do not nest");
    metalcall::Graph graph = recording.end_recording();
    CHECK(recorded.done());
    CHECK(graph.size() == 1);
    CHECK(read<std::uint32_t>(out)[7] == 0);  // recording ran nothing
    graph.replay().wait();
    CHECK(read<std::uint32_t>(out)[7] == 7);
    graph.update(0, {Argument::from_buffer(in_b), Argument::from_buffer(out)});
    graph.replay().wait();
    CHECK(read<std::uint32_t>(out)[7] == 107);
    expect_throw<metalcall::ArgumentError>([&] { graph.update(3, {}); }, "no call 3");
    expect_throw<metalcall::ArgumentError>([&] { recording.end_recording(); }, "already ended");
  });

  run("batch discard releases keep-alives", [&] {
    auto owner = std::make_shared<int>(1);
    metalcall::Batch batch = dev.begin_batch();
    batch.keep_alive(owner);
    CHECK(owner.use_count() == 2);
    batch.discard();
    CHECK(owner.use_count() == 1);
  });

  run("function constants by name and index", [&] {
    Library fc = dev.compile(kConstantsSource);
    const std::size_t n = 32;
    std::vector<float> in(n);
    for (std::size_t i = 0; i < n; ++i) in[i] = static_cast<float>(i);
    Buffer bin = buffer_of(dev, in), out = dev.allocate(n * sizeof(float));

    Kernel by_name = fc.function("scaled", {FunctionConstant{"scale", -1, Argument::from_float(2.0)}});
    by_name(grid(n), {Argument::from_buffer(bin), Argument::from_buffer(out)}).wait();
    auto values = read<float>(out);
    for (std::size_t i = 0; i < n; ++i) CHECK(values[i] == 2.0f * in[i]);

    Kernel by_index = fc.function("scaled", {FunctionConstant{"", 0, Argument::from_float(-0.5)},
                                             FunctionConstant{"", 1, Argument::from_int(100)}});
    by_index(grid(n), {Argument::from_buffer(bin), Argument::from_buffer(out)}).wait();
    values = read<float>(out);
    for (std::size_t i = 0; i < n; ++i) CHECK(values[i] == -0.5f * in[i] + 100.0f);

    // Different constants are different pipelines; the first is unchanged.
    by_name(grid(n), {Argument::from_buffer(bin), Argument::from_buffer(out)}).wait();
    CHECK(read<float>(out)[5] == 10.0f);
    expect_throw<metalcall::ArgumentError>(
        [&] { fc.function("scaled", {FunctionConstant{"no_such_constant", -1, Argument::from_int(1)}}); },
        "unknown function constant");
  });

  run("parameters that a false function constant switches off", [&] {
    Library opt = dev.compile(kOptionalSource);
    const std::size_t n = 16;
    std::vector<float> in(n), bias(n);
    for (std::size_t i = 0; i < n; ++i) in[i] = static_cast<float>(i), bias[i] = 0.5f;
    Buffer bin = buffer_of(dev, in), bbias = buffer_of(dev, bias), out = dev.allocate(n * sizeof(float));
    Kernel off = opt.function("biased", {FunctionConstant{"has_bias", -1, Argument::from_bool(false)}});
    CHECK(!off.info().params[2].enabled && off.info().params[2].function_constant == "has_bias");
    off(grid(n), {Argument::from_buffer(bin), Argument::from_buffer(out)}).wait();  // left off the end
    CHECK(read<float>(out)[3] == 3.0f);
    off(grid(n), {Argument::from_buffer(bin), Argument::from_buffer(out), Argument::none()}).wait();
    CHECK(read<float>(out)[3] == 3.0f);
    expect_throw<metalcall::ArgumentError>(
        [&] { off(grid(n), {Argument::from_buffer(bin), Argument::from_buffer(out), Argument::from_buffer(bbias)}); },
        "a value for a switched-off parameter");
    Kernel on = opt.function("biased", {FunctionConstant{"has_bias", -1, Argument::from_bool(true)}});
    CHECK(on.info().params[2].enabled);
    on(grid(n), {Argument::from_buffer(bin), Argument::from_buffer(out), Argument::from_buffer(bbias)}).wait();
    CHECK(read<float>(out)[3] == 3.5f);
    expect_throw<metalcall::ArgumentError>(
        [&] { on(grid(n), {Argument::from_buffer(bin), Argument::from_buffer(out), Argument::none()}); },
        "None for a parameter that exists");
  });

  run("asynchronous calls and synchronize", [&] {
    const std::size_t n = 1 << 16;
    Buffer out = dev.allocate(n * sizeof(std::uint32_t));
    Kernel add_n = lib.function("add_n");
    std::vector<Completion> pending;
    for (std::uint32_t k = 0; k < 4; ++k)
      pending.push_back(add_n(grid(n), {Argument::from_buffer(out), Argument::from_uint(k)}));
    dev.synchronize();
    for (const auto& c : pending) CHECK(c.done());
    const auto values = read<std::uint32_t>(out);
    CHECK(values[0] == 3 && values[n - 1] == 3 + (n - 1));
  });

  run("checked mode raises ExecutionError", [&] {
    metalcall::DeviceOptions options;
    options.checked = true;
    Device checked = Device::open("cpu", options);
    CHECK(checked.options().checked);
    Buffer a = checked.allocate(16 * sizeof(float));
    Kernel overrun = checked.compile(kOutOfBoundsSource).function("overrun");
    const auto e = expect_throw<metalcall::ExecutionError>(
        [&] { overrun(grid(16), {Argument::from_buffer(a)}).wait(); }, "out of bounds");
    CHECK(std::string(e.what()).find("overrun") != std::string::npos);
  });

  run("textures and samplers", [&] {
    const char* source = R"(#include <metal_stdlib>
using namespace metal;
kernel void shift(texture2d<float, access::sample> src [[texture(0)]], sampler s [[sampler(0)]],
                  texture2d<float, access::write> dst [[texture(1)]], uint2 p [[thread_position_in_grid]]) {
  dst.write(src.sample(s, float2(p) + float2(1.5f, 0.5f)), p);
})";
    metalcall::TextureDescriptor d;
    d.format = metalcall::PixelFormat::parse("r32float");
    CHECK(d.format.name() == "r32float" && d.format.bytes_per_pixel() == 4);
    d.width = 4;
    d.height = 2;
    metalcall::Texture src = dev.texture(d), dst = dev.texture(d);
    CHECK(src.row_pitch() == 16 && src.slice_pitch() == 32 && src.slices() == 1);
    auto* texels = static_cast<float*>(src.storage().data());
    for (int i = 0; i < 8; ++i) texels[i] = static_cast<float>(i);
    metalcall::Sampler s;
    s.normalized_coordinates = false;  // pixel coordinates, clamp_to_edge, nearest
    LaunchShape shape = grid(4, 2);
    shape.textures = {src, dst};
    shape.samplers = {s};
    dev.compile(source).function("shift")(shape, {}).wait();
    const auto* out = static_cast<const float*>(dst.storage().host_data());
    const float want[8] = {1, 2, 3, 3, 5, 6, 7, 7};  // one texel to the right, clamped at the edge
    for (int i = 0; i < 8; ++i) CHECK(out[i] == want[i]);
    expect_throw<metalcall::ArgumentError>([&] { metalcall::PixelFormat::parse("rgba8float"); }, "no 8-bit float");
  });

  std::printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
