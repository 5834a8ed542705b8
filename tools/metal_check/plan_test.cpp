// Tests of the Metal planner (cpp/src/backends/metal_plan): the decisions the Metal backend makes
// about a submission, checked on the plan's text (describe()) without a GPU. Built and run by
// tools/metal_check/check.py; the Metal simulator runs the same plans (tests/test_metal_sim.py).
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/metal_plan/command_buffer_end.hpp"
#include "backends/metal_plan/device_rules.hpp"
#include "backends/metal_plan/planner.hpp"
#include "backends/metal_plan/staging_pool.hpp"
#include "metalcall/errors.hpp"

using namespace metalcall;
using namespace metalcall::metal;

namespace {

int failures = 0;
int checks = 0;
constexpr std::uint64_t kDevice = 7;

void expect(bool ok, const std::string& what) {
  ++checks;
  if (!ok) {
    ++failures;
    std::printf("FAIL: %s\n", what.c_str());
  }
}

void expect_argument_error(const std::function<void()>& body, const std::string& what, const std::string& fragment) {
  ++checks;
  try {
    body();
  } catch (const ArgumentError& e) {
    if (std::string(e.what()).find(fragment) != std::string::npos) return;
    ++failures;
    std::printf("FAIL: %s: message lacks '%s': %s\n", what.c_str(), fragment.c_str(), e.what());
    return;
  } catch (const std::exception& e) {
    ++failures;
    std::printf("FAIL: %s: wrong exception: %s\n", what.c_str(), e.what());
    return;
  }
  ++failures;
  std::printf("FAIL: %s: nothing thrown\n", what.c_str());
}

ParamInfo buffer_param(int position, const std::string& name, AddressSpace space = AddressSpace::device) {
  ParamInfo p;
  p.position = position;
  p.binding = position;
  p.name = name;
  p.kind = ParamKind::buffer;
  p.address_space = space;
  p.element_size = 4;
  p.element_align = 4;
  return p;
}

std::shared_ptr<PlanProgram> program(const std::string& name, std::vector<ParamInfo> params,
                                     std::uint64_t device = kDevice) {
  KernelInfo info;
  info.name = name;
  info.params = std::move(params);
  info.max_total_threads_per_threadgroup = 1024;
  return std::make_shared<PlanProgram>(std::move(info), device, 0);
}

DispatchCommand call(const std::shared_ptr<PlanProgram>& p, std::vector<BoundArgument> args, std::uint32_t n = 64) {
  DispatchCommand c;
  c.program = p;
  c.grid[0] = n;
  c.threadgroup[0] = 32;
  c.args = std::move(args);
  return c;
}

BoundArgument host(void* data, std::size_t nbytes, bool written) {
  BoundArgument a;
  a.kind = ParamKind::buffer;
  a.host_data = data;
  a.host_nbytes = nbytes;
  a.written = written;
  return a;
}

BoundArgument buffer(const std::shared_ptr<BufferStorage>& storage, bool written) {
  BoundArgument a;
  a.kind = ParamKind::buffer;
  a.buffer = storage;
  a.written = written;
  return a;
}

PlanTarget target() {
  PlanTarget t;
  t.name = "the test GPU";
  t.registry_id = kDevice;
  t.max_buffer_length = 1 << 20;
  t.threadgroup_memory_length = 32768;
  t.nonuniform_threadgroups = true;
  t.page_size = 4096;
  return t;
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// P2.1 item 2: two calls of one batch that bind the same host array share one staging buffer,
// so the second reads what the first wrote, and it is copied back once.
void test_host_memory_shared_by_calls() {
  alignas(256) static float a[64], b[64];
  auto writer = program("writer", {buffer_param(0, "a")});
  auto reader = program("reader", {buffer_param(0, "a"), buffer_param(1, "b")});
  std::vector<DispatchCommand> calls;
  calls.push_back(call(writer, {host(a + 1, 60, true)}));  // not page-aligned: staged
  calls.push_back(call(reader, {host(a + 1, 60, false), host(b + 1, 60, true)}));
  const std::string plan = describe(make_plan(std::move(calls), target()));
  expect(count(plan, "staging") == 2, "one staging buffer per host array:\n" + plan);
  expect(count(plan, "copy_in") == 2, "each host array copied in once:\n" + plan);
  expect(count(plan, "copy_back") == 2 && count(plan, "copy_back buffer 0") == 1,
         "each written range copied back once:\n" + plan);
  expect(count(plan, "begin_compute") == 1, "both calls in one compute pass:\n" + plan);

  // Overlapping views of one array (a[0:32] written, a[16:48] read) are one memory.
  std::vector<DispatchCommand> overlapping;
  overlapping.push_back(call(writer, {host(a, 128, true)}));
  overlapping.push_back(call(writer, {host(a + 16, 128, false)}));
  const std::string plan2 = describe(make_plan(std::move(overlapping), target()));
  expect(count(plan2, "staging") == 1 && count(plan2, "copy_in buffer 0 offset 0 length 192") == 1,
         "overlapping ranges are one staging buffer:\n" + plan2);
  expect(count(plan2, "set_buffer 0 offset 64 index 0") == 1, "the second view bound at its offset:\n" + plan2);
  expect(count(plan2, "copy_back buffer 0 offset 0 length 128") == 1 && count(plan2, "copy_back") == 1,
         "only the written range copied back:\n" + plan2);
}

// Constant-space bindings at offsets that are not multiples of 256 get an aligned copy by a blit.
void test_constant_offsets() {
  alignas(256) static float a[256];
  auto k = program("k", {buffer_param(0, "whole"), buffer_param(1, "part", AddressSpace::constant)});
  std::vector<DispatchCommand> calls;
  calls.push_back(call(k, {host(a, 1024, true), host(a + 4, 64, false)}));
  const std::string plan = describe(make_plan(std::move(calls), target()));
  expect(count(plan, "blit_copy buffer 0 offset 16 to buffer 1 offset 0 length 64") == 1 &&
             plan.find("begin_blit") < plan.find("begin_compute"),
         "an aligned copy made by a blit before the call's pass:\n" + plan);
  expect(count(plan, "set_buffer 1 offset 0 index 1") == 1, "the copy bound at offset 0:\n" + plan);
}

// P2.1 item 2, its last class: host memory inside a Buffer (a NumPy view of it), which core binds
// as the Buffer at an offset, is that Buffer's MTLBuffer at the offset, never a staging copy; a
// constant-space view at an offset Metal refuses gets an aligned copy, and a written device view
// none.
BoundArgument view(const std::shared_ptr<BufferStorage>& storage, std::size_t offset, std::size_t nbytes,
                   bool written) {
  BoundArgument a = buffer(storage, written);
  a.offset = offset;
  a.view_nbytes = nbytes;
  return a;
}

void test_views_of_a_buffer() {
  auto storage = std::make_shared<PlanBufferStorage>(std::malloc(4096), 4096, kDevice);
  auto writer = program("writer", {buffer_param(0, "a")});
  auto reader = program("reader", {buffer_param(0, "part", AddressSpace::constant), buffer_param(1, "out")});
  std::vector<DispatchCommand> calls;
  calls.push_back(call(writer, {view(storage, 16, 1024, true)}));
  calls.push_back(call(writer, {buffer(storage, true)}));
  calls.push_back(call(reader, {view(storage, 32, 64, false), view(storage, 512, 64, true)}));
  const std::string plan = describe(make_plan(std::move(calls), target()));
  expect(count(plan, "storage") == 1 && count(plan, "copy_in") == 0 && count(plan, "copy_back") == 0,
         "views are the Buffer's own MTLBuffer, nothing staged:\n" + plan);
  expect(count(plan, "set_buffer 0 offset 16 index 0") == 1 && count(plan, "set_buffer 0 offset 0 index 0") == 1,
         "a device view bound at its offset, the Buffer at 0:\n" + plan);
  expect(count(plan, "blit_copy buffer 0 offset 32 to buffer 1 offset 0 length 64") == 1 &&
             count(plan, "set_buffer 1 offset 0 index 0") == 1 && count(plan, "set_buffer 0 offset 512 index 1") == 1,
         "a constant view at offset 32 gets an aligned copy after the writers' pass:\n" + plan);
  expect(plan.find("begin_blit") > plan.find("end_pass"), "the copy's blit pass follows the writers' pass:\n" + plan);
  std::free(storage->data());
}

// P2.1 item 3: a call that reads a buffer through a texture after a call of the same pass wrote it.
void test_texture_over_written_buffer() {
  auto storage = std::make_shared<PlanBufferStorage>(std::malloc(4096), 4096, kDevice);
  TextureDescriptor d;
  d.width = 16, d.height = 16;
  std::vector<MipLevel> levels(1);
  levels[0].row_pitch = 64, levels[0].slice_pitch = 1024, levels[0].width = 16, levels[0].height = 16;
  const Texture texture(Buffer(storage), d, levels);
  ParamInfo tex;
  tex.position = 0, tex.binding = 0, tex.name = "t", tex.kind = ParamKind::texture;
  tex.texture_type = TextureType::texture2d, tex.texture_access = TextureAccess::read;
  auto writer = program("writer", {buffer_param(0, "a")});
  auto sampler = program("reader", {tex});
  BoundArgument t;
  t.kind = ParamKind::texture, t.buffer = storage, t.texture = texture;
  std::vector<DispatchCommand> calls;
  calls.push_back(call(writer, {buffer(storage, true)}));
  calls.push_back(call(sampler, {t}));
  calls.push_back(call(sampler, {t}));
  const Plan made = make_plan(std::move(calls), target());
  const std::string plan = describe(made);
  expect(count(plan, "begin_compute") == 2, "the texture read starts a new pass, the next read stays in it:\n" + plan);
  expect(count(plan, "texture 0 over_buffer buffer 0") == 1, "a texture over the buffer:\n" + plan);
  const PlanTexture& over = made.textures.at(0);
  expect(over.descriptor.type == PlanTextureDescriptor::Type::type2d && !over.descriptor.private_storage &&
             over.descriptor.mipmap_levels == 1 && over.descriptor.shader_read && over.descriptor.shader_write &&
             over.bytes_per_row == 64 && over.descriptor.width == 16 && over.descriptor.height == 16,
         "over a buffer: 2-D, shared, one level, the Texture's usage, its row pitch");
  std::free(storage->data());
}

// The MTLTextureDescriptor of a staged texture is the planner's: type, depth format, slices,
// levels, private storage, and write usage only where a call writes it.
void test_staged_texture_descriptors() {
  auto storage = std::make_shared<PlanBufferStorage>(std::malloc(1 << 16), 1 << 16, kDevice);
  ParamInfo tex;
  tex.position = 0, tex.binding = 0, tex.name = "t", tex.kind = ParamKind::texture;
  tex.texture_access = TextureAccess::read;
  auto reader = program("reader", {tex});
  ParamInfo written = tex;
  written.texture_access = TextureAccess::write;
  auto writer = program("writer", {written});
  struct Case { TextureType type; std::uint32_t depth, array_length, levels; PlanTextureDescriptor::Type want; };
  const Case cases[] = {{TextureType::texture3d, 4, 1, 1, PlanTextureDescriptor::Type::type3d},
                        {TextureType::texture2d_array, 1, 3, 1, PlanTextureDescriptor::Type::type2d_array},
                        {TextureType::texturecube, 1, 6, 1, PlanTextureDescriptor::Type::cube},
                        {TextureType::depth2d, 1, 1, 1, PlanTextureDescriptor::Type::type2d},
                        {TextureType::texture2d, 1, 1, 3, PlanTextureDescriptor::Type::type2d}};
  for (const Case& c : cases) {
    TextureDescriptor d;
    d.type = c.type, d.width = 8, d.height = 8, d.depth = c.depth, d.array_length = c.array_length;
    d.mip_levels = c.levels;
    std::vector<MipLevel> levels;
    for (std::uint32_t l = 0; l < c.levels; ++l) {
      MipLevel m;
      m.width = m.height = 8 >> l, m.row_pitch = 64, m.slice_pitch = 512, m.offset = 2048 * l;
      m.depth = c.type == TextureType::texture3d ? c.depth : 1;
      levels.push_back(m);
    }
    const Texture texture(Buffer(storage), d, levels);
    BoundArgument t;
    t.kind = ParamKind::texture, t.buffer = storage, t.texture = texture;
    std::vector<DispatchCommand> calls;
    calls.push_back(call(reader, {t}));
    calls.push_back(call(writer, {t}));
    const Plan plan = make_plan(std::move(calls), target());
    const std::string what = std::string("staged ") + to_string(c.type) + ":\n" + describe(plan);
    expect(plan.textures.size() == 2 && plan.textures[0].source == PlanTexture::Source::staged, what);
    const PlanTextureDescriptor& r = plan.textures[0].descriptor;
    const PlanTextureDescriptor& w = plan.textures[1].descriptor;
    expect(r.type == c.want && r.private_storage && r.mipmap_levels == c.levels && r.shader_read && !r.shader_write &&
               w.shader_write && r.depth32_float == (c.type == TextureType::depth2d) &&
               r.depth == (c.type == TextureType::texture3d ? c.depth : 1u) &&
               r.array_length == (c.type == TextureType::texture2d_array ? c.array_length : 1u),
           what);
  }
  std::free(storage->data());
}

// What the backend decides about a device: its architecture and non-uniform threadgroups from
// the families Metal says it supports, Buffer lengths, one device per GPU.
void test_device_rules() {
  expect(architecture_of({"mac2", "apple7", "apple6", "apple5", "apple4"}) == "apple7", "an M1 is apple7");
  expect(architecture_of({"mac2"}) == "mac2" && architecture_of({}) == "unknown", "Intel/AMD Macs are mac2");
  expect(nonuniform_threadgroups("apple4") && nonuniform_threadgroups("apple9") && nonuniform_threadgroups("mac2") &&
             !nonuniform_threadgroups("apple3") && !nonuniform_threadgroups("unknown"),
         "dispatchThreads: on Apple4+ and Mac2 only");
  DeviceInfo info;
  info.name = "the test GPU", info.architecture = "apple3", info.max_buffer_length = 1024, info.registry_id = kDevice;
  const PlanTarget t = plan_target(info, 16384, nullptr);
  expect(t.registry_id == kDevice && !t.nonuniform_threadgroups && t.page_size == 16384 && t.max_buffer_length == 1024,
         "the plan target of a device");
  expect(buffer_length(0, info, "[metal]") == 4 && buffer_length(5, info, "[metal]") == 8 &&
             buffer_length(1024, info, "[metal]") == 1024,
         "a Buffer's MTLBuffer: at least 1 byte, whole 4-byte words (buffer blits on macOS)");
  expect_argument_error([&] { buffer_length(1025, info, "[metal]"); }, "a Buffer over maxBufferLength",
                        "the largest buffer the test GPU allows is 1024 bytes");
  int made = 0;
  auto make = [&] {
    ++made;
    return std::shared_ptr<BackendDevice>();  // none: the next open makes one again
  };
  one_device_per_gpu("plan_test:gpu", make);
  one_device_per_gpu("plan_test:gpu", make);
  expect(made == 2, "a device that could not be made is made again");
}

// The staging pool: the smallest kept buffer within twice the size, bounded in count and bytes.
void test_staging_pool() {
  StagingPool<int> pool;
  expect(StagingPool<int>::allocation_length(1) == 4096 && StagingPool<int>::allocation_length(8192) == 8192,
         "staging buffers of whole pages");
  expect(!pool.take(100), "an empty pool has nothing");
  pool.give_back(1, 8192);
  pool.give_back(2, 4096);
  pool.give_back(3, 1 << 20);
  auto small = pool.take(3000);
  expect(small && small->first == 2, "the smallest buffer that fits");
  expect(!pool.take(100000), "none within twice the size: a new one");
  auto big = pool.take(600000);
  expect(big && big->first == 3 && !pool.take(600000), "a kept buffer is taken once");
  int kept = 0;
  for (int i = 0; i < 40; ++i) kept += pool.give_back(10 + i, 4096);
  expect(kept == 15, "at most 16 kept buffers (one was there): " + std::to_string(kept));
  StagingPool<int> bytes;
  expect(bytes.give_back(1, std::size_t(48) << 20) && !bytes.give_back(2, std::size_t(32) << 20),
         "at most 64 MiB kept");
}

// Every blit_copy of `plan` moves whole 4-byte words from and to word offsets (macOS's rule for
// copyFromBuffer:sourceOffset:toBuffer:destinationOffset:size:).
bool blits_in_words(const std::string& plan) {
  for (std::size_t at = plan.find("blit_copy"); at != std::string::npos; at = plan.find("blit_copy", at + 1)) {
    unsigned long src = 0, from = 0, dst = 0, to = 0, length = 0;
    if (std::sscanf(plan.c_str() + at, "blit_copy buffer %lu offset %lu to buffer %lu offset %lu length %lu", &src, &from,
                    &dst, &to, &length) != 5 ||
        from % 4 || to % 4 || length % 4)
      return false;
  }
  return true;
}

// Constant-space views of 1- and 2-byte types: the aligned copy's blit is whole words (the size
// rounded up inside buffers of whole words); a view at 1 to 3 bytes past a word, which no blit
// can move, is a host copy of its own, refused where an earlier call of the batch writes it (host
// memory) or where it is a Buffer's (the GPU's memory, written by earlier work).
void test_blits_in_words() {
  alignas(4096) static unsigned char bytes[8192];
  ParamInfo halves = buffer_param(0, "halves", AddressSpace::constant);
  halves.element_size = halves.element_align = 2;
  auto k = program("k", {halves, buffer_param(1, "out")});
  auto writer = program("writer", {buffer_param(0, "a")});
  {
    std::vector<DispatchCommand> calls;
    calls.push_back(call(k, {host(bytes + 16, 10, false), host(bytes + 512, 64, true)}));
    const std::string plan = describe(make_plan(std::move(calls), target()));
    expect(count(plan, "blit_copy buffer 0 offset 16 to buffer 2 offset 0 length 12") == 1 && blits_in_words(plan),
           "5 halves 16 bytes into a staged array: a blit of 3 words:\n" + plan);
  }
  {
    std::vector<DispatchCommand> calls;
    calls.push_back(call(k, {host(bytes + 18, 10, false), host(bytes + 512, 64, true)}));
    const std::string plan = describe(make_plan(std::move(calls), target()));
    expect(count(plan, "blit_copy") == 0 && count(plan, "copy_in buffer 2 offset 0 length 10") == 1 &&
               count(plan, "set_buffer 2 offset 0 index 0") == 1,
           "halves 2 bytes past a word: a host copy of their own, bound at 0:\n" + plan);
  }
  expect_argument_error([&] {
    std::vector<DispatchCommand> calls;
    calls.push_back(call(writer, {host(bytes, 64, true)}));
    calls.push_back(call(k, {host(bytes + 18, 10, false), host(bytes + 512, 64, true)}));
    make_plan(std::move(calls), target());
  }, "a view past a word that an earlier call writes", "cannot realign it on the GPU");
  auto storage = std::make_shared<PlanBufferStorage>(bytes + 4096, 30, kDevice);
  {
    std::vector<DispatchCommand> calls;
    calls.push_back(call(k, {view(storage, 20, 10, false), host(bytes + 512, 64, true)}));
    const std::string plan = describe(make_plan(std::move(calls), target()));
    expect(count(plan, "buffer 1 storage length 32") == 1 &&
               count(plan, "blit_copy buffer 1 offset 20 to buffer 2 offset 0 length 12") == 1 &&
               blits_in_words(plan),
           "the last 10 bytes of a 30-byte Buffer: 3 words of its 32-byte MTLBuffer:\n" + plan);
  }
  expect_argument_error([&] {
    std::vector<DispatchCommand> calls;
    calls.push_back(call(k, {view(storage, 18, 10, false), host(bytes + 512, 64, true)}));
    make_plan(std::move(calls), target());
  }, "a Buffer view past a word", "which a blit cannot realign");
}

// P2.1 item 8: host memory over maxBufferLength is refused before anything is staged.
void test_max_buffer_length() {
  static char big[4096];
  auto k = program("k", {buffer_param(0, "a")});
  PlanTarget small = target();
  small.max_buffer_length = 1024;
  expect_argument_error([&] {
    std::vector<DispatchCommand> calls;
    calls.push_back(call(k, {host(big, 4096, false)}));
    make_plan(std::move(calls), small);
  }, "host memory over maxBufferLength", "more than the largest buffer the test GPU allows (1024 bytes)");
}

// Programs and buffers of another device, grids a GPU without non-uniform threadgroups cannot run.
void test_refusals() {
  auto other = program("other", {buffer_param(0, "a")}, kDevice + 1);
  expect_argument_error([&] {
    std::vector<DispatchCommand> calls;
    calls.push_back(call(other, {}));
    make_plan(std::move(calls), target());
  }, "a pipeline of another device", "was built for another device");
  auto k = program("k", {buffer_param(0, "a")});
  auto foreign = std::make_shared<PlanBufferStorage>(nullptr, 16, kDevice + 1);
  expect_argument_error([&] {
    std::vector<DispatchCommand> calls;
    calls.push_back(call(k, {buffer(foreign, false)}));
    make_plan(std::move(calls), target());
  }, "a buffer of another device", "is memory of another device");
  PlanTarget uniform = target();
  uniform.nonuniform_threadgroups = false;
  auto storage = std::make_shared<PlanBufferStorage>(nullptr, 4096, kDevice);
  expect_argument_error([&] {
    std::vector<DispatchCommand> calls;
    calls.push_back(call(k, {buffer(storage, true)}, 100));
    make_plan(std::move(calls), uniform);
  }, "a grid that is not whole threadgroups", "runs whole threadgroups only");
  std::vector<DispatchCommand> calls;
  calls.push_back(call(k, {buffer(storage, true)}, 96));
  const std::string plan = describe(make_plan(std::move(calls), uniform));
  expect(count(plan, "dispatch_threadgroups 3x1x1 group 32x1x1") == 1, "whole threadgroups dispatched:\n" + plan);
}

// P2.1 item 5: samplers with unnormalised coordinates only where Apple defines them.
void test_unnormalised_samplers() {
  Sampler s;
  s.normalized_coordinates = false;
  check_metal_sampler(s, TextureType::texture2d, "ok");  // clamp_to_edge, nearest, no mips: allowed
  ++checks;
  Sampler repeat = s;
  repeat.s_address = SamplerAddress::repeat;
  expect_argument_error([&] { check_metal_sampler(repeat, TextureType::texture2d, "sampler"); }, "repeat",
                        "clamp_to_edge or clamp_to_zero");
  Sampler mips = s;
  mips.mip_filter = SamplerMipFilter::linear;
  expect_argument_error([&] { check_metal_sampler(mips, TextureType::texture2d, "sampler"); }, "mip filter",
                        "mip levels");
  Sampler mixed = s;
  mixed.mag_filter = SamplerFilter::linear;
  expect_argument_error([&] { check_metal_sampler(mixed, TextureType::texture2d, "sampler"); }, "min != mag",
                        "min and mag filters must be equal");
  expect_argument_error([&] { check_metal_sampler(s, TextureType::texture3d, "sampler"); }, "a 3-D texture",
                        "only 1-D and 2-D textures");
  Sampler normalised = repeat;
  normalised.normalized_coordinates = true;
  check_metal_sampler(normalised, TextureType::texture3d, "ok");
}

}  // namespace

// The error a finished Completion holds ("" when none).
std::string error_of(CompletionState& completion) {
  try {
    completion.wait(false);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// P2.1 item 7: ending a command buffer finishes its Completion whatever a step throws.
void test_finish_submission() {
  {
    CompletionState completion;
    bool released = false;
    finish_submission(completion, [] { return 0.5; }, [&] { released = true; });
    expect(completion.done() && released && error_of(completion).empty() && completion.device_seconds() == 0.5,
           "a command buffer that succeeded: released, finished with its time");
  }
  {
    CompletionState completion;
    bool released = false;
    finish_submission(completion, []() -> double { throw ExecutionError("copy-back failed"); },
                      [&] { released = true; });
    expect(released && error_of(completion) == "copy-back failed", "a failing outcome: still released, its error");
  }
  {
    CompletionState completion;
    finish_submission(completion, [] { return 1.0; }, [] { throw ExecutionError("release failed"); });
    expect(completion.done() && error_of(completion) == "release failed", "a failing release: finished, its error");
  }
  {
    CompletionState completion;
    finish_submission(completion, []() -> double { throw ExecutionError("first"); },
                      [] { throw ExecutionError("second"); });
    expect(error_of(completion) == "first", "two failing steps: the first error");
  }
  {
    CompletionState completion;
    try {
      try {
        throw ExecutionError("encoding failed");
      } catch (...) {
        abandon_submission(completion, [] { throw ExecutionError("release failed"); });
        throw;
      }
    } catch (const ExecutionError&) {
    }
    expect(completion.done() && error_of(completion) == "encoding failed",
           "a plan that never reached the GPU: finished with the error that stopped it");
  }
}

// P2.1 item 10: what a failed command buffer tells the user to do.
void test_gpu_failure_text() {
  const std::string removed = gpu_failure_text({}, "Device removed", GpuFailure::device_removed, "[metal]");
  expect(removed == "[metal] the GPU failed while running kernel: Device removed. The GPU is no longer available to "
                    "this process: restart the process, or use mc.Device(\"cpu\")",
         "a lost GPU: restart the process, never open the device again: " + removed);
  const std::string denied = gpu_failure_text({}, "x", GpuFailure::not_permitted, "[metal]");
  expect(denied.find("restart the process") != std::string::npos && denied.find("again") == std::string::npos,
         "not permitted: " + denied);
  const std::string start = unable_to_start_text("compute pass", "Apple M1", "[metal]");
  expect(start.find("restart the process") != std::string::npos && start.find("again") == std::string::npos,
         "no encoder: " + start);
  expect(gpu_failure_text({}, "x", GpuFailure::page_fault, "[metal]").find("checked=True") != std::string::npos,
         "a page fault points to checked mode");
}

int main() {
  test_finish_submission();
  test_gpu_failure_text();
  test_host_memory_shared_by_calls();
  test_constant_offsets();
  test_views_of_a_buffer();
  test_texture_over_written_buffer();
  test_staged_texture_descriptors();
  test_device_rules();
  test_staging_pool();
  test_max_buffer_length();
  test_refusals();
  test_unnormalised_samplers();
  test_blits_in_words();
  if (failures) {
    std::printf("metal plan tests: %d of %d checks failed\n", failures, checks);
    return 1;
  }
  std::printf("metal plan tests: %d checks passed\n", checks);
  return 0;
}
