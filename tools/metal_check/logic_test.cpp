// Tests of the Metal backend's plain C++ (cpp/src/backends/metal/metal_support.cpp, and the
// msl/errors/diagnostics.cpp parser it uses): the parts that need no GPU, run on any machine by
// tools/metal_check/check.py.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "backends/metal/metal_backend.hpp"
#include "metalcall/errors.hpp"
#include "msl/errors/diagnostics.hpp"
#include "msl/lex/clang_macros.hpp"
#include "msl/translate/front_end.hpp"
#include "msl/translate/translator.hpp"

using namespace metalcall;
using namespace metalcall::metal;

namespace {

int failures = 0;
int checks = 0;

void expect(bool ok, const std::string& what) {
  ++checks;
  if (!ok) {
    ++failures;
    std::printf("FAIL: %s\n", what.c_str());
  }
}

template <class E>
void expect_throws(const std::function<void()>& body, const std::string& what, const std::string& fragment = {}) {
  ++checks;
  try {
    body();
  } catch (const E& e) {
    if (fragment.empty() || std::string(e.what()).find(fragment) != std::string::npos) return;
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

ParamInfo param(int position, int binding, const std::string& name, ParamKind kind) {
  ParamInfo p;
  p.position = position;
  p.binding = binding;
  p.name = name;
  p.kind = kind;
  return p;
}

BindingInfo binding(BindingInfo::Kind kind, int index, const std::string& name, std::size_t size, std::size_t align) {
  BindingInfo b;
  b.kind = kind;
  b.index = index;
  b.name = name;
  b.data_size = size;
  b.alignment = align;
  return b;
}

void test_compile_log() {
  const std::string source = "#include <metal_stdlib>\nusing namespace metal;\nkernel void k(device float* a [[buffer(0)]]) {\n    flot x = 1;\r\n}\n";
  const std::string log =
      "Compilation failed: \n\nprogram_source:3:5: warning: unused variable 'y'\n"
      "program_source:4:5: error: unknown type name 'flot'; did you mean 'float'?\n    flot x = 1;\n    ^\n";
  const std::vector<msl::Diagnostic> ds = parse_compile_log(log);
  expect(ds.size() == 2 && !ds[0].error && ds[1].error, "a warning and an error parsed");
  expect(ds.size() == 2 && ds[1].file == msl::kSourceName, "program_source is named as on the other backends");
  const CompileError error = compile_error_from_log(log, source, "[metal] unable to build the library");
  expect(error.line() == 4 && error.column() == 5, "error position is line 4, column 5 (not the warning's)");
  expect(error.source_line() == "    flot x = 1;", "source line without \\r: [" + error.source_line() + "]");
  expect(error.log() == log, "CompileError carries Metal's log");
  expect(std::string(error.what()).find("source.metal:4:5: error: unknown type name 'flot'; did you mean 'float'?\n"
                                        "    flot x = 1;\n    ^") == 0,
         std::string("CompileError message as on the other backends: ") + error.what());

  const std::vector<msl::Diagnostic> fatal = parse_compile_log("program_source:1:10: fatal error: 'nope.h' file not found\r\n");
  expect(fatal.size() == 1 && fatal[0].line == 1 && fatal[0].column == 10 && fatal[0].error &&
             fatal[0].message == "'nope.h' file not found",
         "fatal error parsed, \\r dropped");

  const CompileError bare = compile_error_from_log("\n  Something else went wrong\n", source, "[metal] unable to build the library");
  expect(bare.line() == 0 && std::string(bare.what()).find("[metal] unable to build the library") == 0 &&
             std::string(bare.what()).find("Something else went wrong") != std::string::npos,
         std::string("a log without position keeps its text: ") + bare.what());

  const CompileError past_end = compile_error_from_log("program_source:99:1: error: x\n", source, "[metal] unable");
  expect(past_end.line() == 99 && past_end.source_line().empty(), "a line past the end has no source line");

  // An error inside a Metal header is reported where the user's code led to it.
  const CompileError in_header = compile_error_from_log(
      "/System/Library/metal_math:10:3: error: no matching function\nprogram_source:4:5: note: in instantiation\n",
      source, "[metal] unable to build the library");
  expect(in_header.line() == 4 && in_header.column() == 5 &&
             std::string(in_header.what()).find("no matching function") != std::string::npos,
         std::string("header error located in the source: ") + in_header.what());
}

// The shared clang-style line parser (msl/errors/diagnostics.cpp) that the Metal log goes through.
void test_clang_style_line() {
  msl::Diagnostic d;
  expect(msl::parse_clang_style_line("C:\\dir\\a.metal:3:7: error: x: 1:2: error: y", d) && d.file == "C:\\dir\\a.metal" &&
             d.line == 3 && d.column == 7 && d.error && d.message == "x: 1:2: error: y",
         "a file name with ':' and a message quoting a diagnostic: " + d.file + " / " + d.message);
  expect(msl::parse_clang_style_line("k.metal:12: warning: w", d) && d.file == "k.metal" && d.line == 12 &&
             d.column == 0 && !d.error && d.message == "w",
         "a position without column");
  expect(msl::parse_clang_style_line("a.h:1:2: note: here", d) && !d.error && d.message == "here", "a note");
  msl::Diagnostic untouched;
  untouched.line = 42;
  for (const char* other : {"In file included from program_source:1:", "error: no input files", "a:b:c: error: x",
                            "file:1:2: remark: x", "file:1:2:error: x", ""})
    expect(!msl::parse_clang_style_line(other, untouched) && untouched.line == 42,
           std::string("not a diagnostic: ") + other);
  const std::string long_line = "program_source:7:1: error: " + std::string(200000, 'x');
  expect(msl::parse_clang_style_line(long_line, d) && d.line == 7 && d.message.size() == 200000,
         "a very long line (no recursion per character)");
}

void test_language_version() {
  expect(parse_language_version("3.1") == std::make_pair(3, 1), "3.1");
  expect(parse_language_version("2.0") == std::make_pair(2, 0), "2.0");
  for (const char* bad : {"", "3", "3.", "31", "3.10", "v3.1", "0.5", "3,1"})
    expect_throws<CompileError>([&] { parse_language_version(bad); }, std::string("bad version '") + bad + "'",
                                "language version");
}

void test_merge_reflection() {
  KernelInfo kernel;
  kernel.name = "mul";
  kernel.params = {param(0, 0, "a", ParamKind::buffer), param(1, 1, "n", ParamKind::reference),
                   param(2, 2, "p", ParamKind::value), param(3, 0, "tg", ParamKind::threadgroup_memory),
                   param(4, -1, "i", ParamKind::builtin)};
  std::vector<BindingInfo> bindings = {
      binding(BindingInfo::Kind::buffer, 0, "a", 4, 4), binding(BindingInfo::Kind::buffer, 1, "n", 4, 4),
      binding(BindingInfo::Kind::buffer, 2, "p", 48, 16),
      binding(BindingInfo::Kind::threadgroup_memory, 0, "tg", 16, 16)};
  KernelInfo merged = kernel;
  merge_reflection(merged, bindings);
  expect(merged.params[0].element_size == 4 && merged.params[0].element_align == 4, "pointer element size");
  expect(merged.params[2].element_size == 48 && merged.params[2].element_align == 16, "struct size and alignment");
  expect(merged.params[3].element_size == 16, "threadgroup element size");
  expect(merged.params[4].element_size == 0, "builtins untouched");

  // Metal may drop an argument the kernel never reads: no error, sizes stay 0.
  KernelInfo partial = kernel;
  merge_reflection(partial, {bindings[0]});
  expect(partial.params[1].element_size == 0, "missing binding leaves size 0");

  KernelInfo renamed = kernel;
  std::vector<BindingInfo> swapped = bindings;
  swapped[0].name = "b";
  expect_throws<CompileError>([&] { merge_reflection(renamed, swapped); }, "names disagree", "disagree");

  KernelInfo extra = kernel;
  std::vector<BindingInfo> more = bindings;
  more.push_back(binding(BindingInfo::Kind::buffer, 7, "hidden", 4, 4));
  expect_throws<CompileError>([&] { merge_reflection(extra, more); }, "binding unknown to the front end",
                              "'hidden' at index 7");

  // Textures and samplers merge by their own index tables; one the front end lacks is a disagreement.
  KernelInfo textured = kernel;
  textured.params.push_back(param(5, 0, "image", ParamKind::texture));
  textured.params.push_back(param(6, 0, "smp", ParamKind::sampler));
  std::vector<BindingInfo> with_texture = bindings;
  with_texture.push_back(binding(BindingInfo::Kind::texture, 0, "image", 0, 0));
  with_texture.push_back(binding(BindingInfo::Kind::sampler, 0, "smp", 0, 0));
  merge_reflection(textured, with_texture);
  expect(textured.params[5].element_size == 0 && textured.params[6].binding == 0, "texture and sampler merged");
  KernelInfo untextured = kernel;
  expect_throws<CompileError>([&] { merge_reflection(untextured, with_texture); }, "unknown texture",
                              "texture 'image' at index 0");
  KernelInfo other = kernel;
  std::vector<BindingInfo> with_other = bindings;
  with_other.push_back(binding(BindingInfo::Kind::other, 0, "table", 0, 0));
  expect_throws<CompileError>([&] { merge_reflection(other, with_other); }, "other bindings are refused",
                              "binds only buffers");
}

void test_kernel_from_bindings() {
  std::vector<BindingInfo> bindings = {binding(BindingInfo::Kind::threadgroup_memory, 0, "scratch", 4, 4),
                                       binding(BindingInfo::Kind::buffer, 2, "out", 4, 4),
                                       binding(BindingInfo::Kind::buffer, 0, "in", 8, 8)};
  bindings[2].read_only = true;
  bindings[2].scalar = ScalarType::f32;
  bindings[2].vector_width = 2;
  const KernelInfo k = kernel_info_from_bindings("saxpy", bindings);
  expect(k.name == "saxpy" && k.params.size() == 3, "three parameters");
  expect(k.params[0].name == "in" && k.params[0].binding == 0 && k.params[0].position == 0, "buffers first, by index");
  expect(k.params[0].is_const && k.params[0].scalar == ScalarType::f32 && k.params[0].vector_width == 2 &&
             k.params[0].element_size == 8,
         "read-only float2 buffer");
  expect(k.params[1].name == "out" && !k.params[1].is_const && k.params[1].kind == ParamKind::buffer, "writable buffer");
  expect(k.params[2].kind == ParamKind::threadgroup_memory && k.params[2].position == 2, "threadgroup memory last");

  std::vector<BindingInfo> images = {binding(BindingInfo::Kind::sampler, 0, "s", 0, 0),
                                     binding(BindingInfo::Kind::texture, 1, "dst", 0, 0),
                                     binding(BindingInfo::Kind::texture, 0, "src", 0, 0)};
  images[2].read_only = true;
  const KernelInfo f = kernel_info_from_bindings("blur", images);
  expect(f.params.size() == 3 && f.params[0].name == "src" && f.params[0].kind == ParamKind::texture &&
             f.params[0].texture_access == TextureAccess::read && f.params[1].name == "dst" &&
             f.params[1].texture_access == TextureAccess::read_write && f.params[2].kind == ParamKind::sampler,
         "textures by index, then samplers");
}

FunctionConstant given(Argument value, std::vector<Argument> components = {}) {
  FunctionConstant c;
  c.value = value;
  c.components = std::move(components);
  return c;
}

std::vector<std::uint8_t> pack(ScalarType t, const Argument& a) {
  return pack_function_constant(t, 1, given(a), "kernel 'k' function constant 'c'");
}

template <class T>
T unpack(const std::vector<std::uint8_t>& bytes) {
  T value{};
  if (bytes.size() == sizeof(T)) std::memcpy(&value, bytes.data(), sizeof(T));
  return value;
}

// Scalars go through core's pack_scalar (tested with the core); here: that the Metal
// path reaches it with the right type, and its own rules for vectors and raw bytes.
void test_function_constants() {
  expect(unpack<std::uint8_t>(pack(ScalarType::boolean, Argument::from_bool(true))) == 1, "bool true");
  expect(unpack<std::int32_t>(pack(ScalarType::i32, Argument::from_int(-7))) == -7, "int -7");
  expect(unpack<std::uint32_t>(pack(ScalarType::u32, Argument::from_uint(4000000000u))) == 4000000000u, "uint");
  expect(unpack<std::uint64_t>(pack(ScalarType::u64, Argument::from_uint(UINT64_MAX))) == UINT64_MAX, "ulong max");
  expect_throws<ArgumentError>([] { pack(ScalarType::u8, Argument::from_int(256)); }, "uchar from 256",
                               "kernel 'k' function constant 'c'");
  expect_throws<ArgumentError>([] { pack(ScalarType::u32, Argument::from_int(-1)); }, "uint from -1");
  expect_throws<ArgumentError>([] { pack(ScalarType::i32, Argument::from_float(1.5)); }, "int from a float");
  expect(unpack<float>(pack(ScalarType::f32, Argument::from_float(0.25))) == 0.25f, "float 0.25");
  expect(unpack<std::uint16_t>(pack(ScalarType::f16, Argument::from_float(1.0))) == 0x3c00, "half 1.0");
  expect(unpack<std::uint16_t>(pack(ScalarType::bf16, Argument::from_float(-2.0))) == 0xc000, "bfloat -2.0");
  expect_throws<ArgumentError>([] { pack(ScalarType::f16, Argument::from_float(70000.0)); }, "half overflow");

  // Vectors: one value per component, each packed as a scalar; a 3-vector has a 4-vector's size.
  const auto f = [](double v) { return Argument::from_float(v); };
  const std::vector<std::uint8_t> v3 = pack_function_constant(ScalarType::f32, 3, given({}, {f(1), f(2), f(3)}), "'v'");
  float got[4] = {9, 9, 9, 9};
  if (v3.size() == 16) std::memcpy(got, v3.data(), 16);
  expect(v3.size() == 16 && got[0] == 1 && got[1] == 2 && got[2] == 3 && got[3] == 0, "float3 as 16 bytes, padded");
  const std::vector<std::uint8_t> u2 =
      pack_function_constant(ScalarType::u16, 2, given({}, {Argument::from_int(7), Argument::from_uint(65535)}), "'s'");
  expect(u2.size() == 4 && unpack<std::uint32_t>(u2) == (65535u << 16 | 7u), "ushort2 (7, 65535)");
  expect_throws<ArgumentError>([&] { pack_function_constant(ScalarType::f32, 3, given({}, {f(1), f(2)}), "'v'"); },
                               "float3 from 2 values", "'v' is a vector of 3: give 3 values");
  expect_throws<ArgumentError>([&] { pack_function_constant(ScalarType::f32, 4, given(f(1)), "'v'"); },
                               "float4 from a scalar", "not a single value");
  expect_throws<ArgumentError>([&] { pack_function_constant(ScalarType::f32, 1, given({}, {f(1), f(2)}), "'s'"); },
                               "float from two values", "is a scalar");
  expect_throws<ArgumentError>(
      [&] { pack_function_constant(ScalarType::u16, 2, given({}, {Argument::from_int(1), Argument::from_int(-1)}), "'s'"); },
      "ushort2 with a negative component", "'s', component 1 (y): -1 does not fit in ushort");
  expect_throws<ArgumentError>([&] { pack_function_constant(ScalarType::i32, 2, given({}, {f(1), f(2)}), "'s'"); },
                               "int2 from floats", "component 0 (x): a floating-point value");
  expect_throws<ArgumentError>([] { pack_function_constant(ScalarType::unknown, 1, given(Argument::from_int(1)), "'s'"); },
                               "unknown type", "cannot set");
}

FunctionConstantSlot slot(const std::string& name, std::size_t index, ScalarType scalar, bool used, bool required = false) {
  FunctionConstantSlot s;
  s.name = name, s.index = index, s.scalar = scalar, s.used = used, s.required = required;
  s.metal_type = used ? 100 + index : 0;
  s.type_name = to_string(scalar);
  return s;
}

FunctionConstant constant(const std::string& name, Argument value) {
  FunctionConstant c;
  c.name = name;
  c.value = value;
  return c;
}

// Which function a pipeline is built from: specialised only when Metal reports constants for it;
// values matched, packed and checked whether passed on or not; required ones enforced.
void test_specialisation() {
  const std::vector<FunctionConstantSlot> declared = {slot("scale", 0, ScalarType::f32, false),
                                                      slot("unused", 1, ScalarType::i32, false)};
  Specialisation plain = specialisation("k", {}, declared, {});
  expect(!plain.specialise && plain.values.empty(), "no constants used: newFunctionWithName: alone");
  Specialisation checked_only = specialisation("k", {}, declared, {constant("unused", Argument::from_int(3))});
  expect(!checked_only.specialise && checked_only.values.empty(), "a declared, unused constant: checked, not passed");
  expect_throws<ArgumentError>([&] { specialisation("k", {}, declared, {constant("unused", Argument::from_float(1.5))}); },
                               "an unused constant is still checked", "function constant 'unused'");
  expect_throws<ArgumentError>([&] { specialisation("k", {}, declared, {constant("nope", Argument::from_int(1))}); },
                               "an unknown constant", "nope");
  std::vector<FunctionConstantSlot> used = {slot("scale", 0, ScalarType::f32, true, true)};
  Specialisation s = specialisation("k", used, declared, {constant("scale", Argument::from_float(0.5))});
  float value = 0;
  expect(s.specialise && s.values.size() == 1 && s.values[0].index == 0 && s.values[0].metal_type == 100 &&
             s.values[0].bytes.size() == 4 && (std::memcpy(&value, s.values[0].bytes.data(), 4), value == 0.5f),
         "a used constant: packed to its type, passed at its index with Metal's type");
  expect_throws<ArgumentError>([&] { specialisation("k", used, declared, {}); }, "a required constant left out",
                               "needs function constant 'scale'");
  used[0].required = false;
  Specialisation optional = specialisation("k", used, declared, {});
  expect(optional.specialise && optional.values.empty(), "an optional constant left out: specialised without it");
}

void test_no_copy() {
  const std::size_t page = 16384;
  const void* aligned = reinterpret_cast<const void*>(std::uintptr_t(page) * 1000);
  const void* offset = reinterpret_cast<const void*>(std::uintptr_t(page) * 1000 + 64);
  expect(no_copy_length(aligned, page * 3, page, 0) == page * 3, "whole pages wrap as they are");
  expect(no_copy_length(aligned, page * 3 + 1, page, 0) == 0, "a partial page without known backing is copied");
  expect(no_copy_length(aligned, page * 3 + 1, page, page * 3) == 0, "backing too short: copied");
  expect(no_copy_length(aligned, page * 3 + 1, page, page * 4) == page * 4, "backing covers the rounding: wrapped");
  expect(no_copy_length(offset, page, page, page * 4) == 0, "unaligned pointers are copied");
  expect(no_copy_length(aligned, 0, page, 0) == 0, "nothing to wrap");
  expect(round_up(17, 16) == 32 && round_up(32, 16) == 32 && round_up(0, 16) == 0, "round_up");
}

void test_staged_textures() {
  TextureDescriptor flat;
  flat.format = PixelFormat{4, 8, PixelKind::unorm};
  flat.width = 16, flat.height = 8;
  expect(texture_over_buffer(flat), "a single-level texture2d is made over its buffer");
  TextureDescriptor mipped = flat;
  mipped.mip_levels = 2;
  expect(!texture_over_buffer(mipped), "a mipmapped texture2d is staged");
  TextureDescriptor cube = flat;
  cube.type = TextureType::texturecube, cube.height = 16, cube.array_length = 6, cube.mip_levels = 2;
  expect(!texture_over_buffer(cube), "a cube texture is staged");

  // Each face of each level is one copy from its own offset.
  const std::vector<MipLevel> cube_levels = {{0, 64, 1024, 16, 16, 1}, {6144, 32, 256, 8, 8, 1}};
  const auto faces = staged_image_copies(cube, cube_levels);
  expect(faces.size() == 12, "a 2-level cube takes 12 copies");
  expect(faces[3].slice == 3 && faces[3].level == 0 && faces[3].offset == 3 * 1024 && faces[3].bytes_per_row == 64 &&
             faces[3].bytes_per_image == 0 && faces[3].width == 16 && faces[3].depth == 1,
         "face 3 of level 0: its slice, offset and row pitch");
  expect(faces[7].slice == 1 && faces[7].level == 1 && faces[7].offset == 6144 + 256 && faces[7].width == 8,
         "face 1 of level 1");

  // A 3-D level is one copy with its images slice_pitch apart.
  TextureDescriptor volume = flat;
  volume.type = TextureType::texture3d, volume.depth = 4, volume.mip_levels = 2;
  const std::vector<MipLevel> volume_levels = {{0, 64, 512, 16, 8, 4}, {2048, 32, 128, 8, 4, 2}};
  const auto blocks = staged_image_copies(volume, volume_levels);
  expect(blocks.size() == 2 && blocks[0].depth == 4 && blocks[0].bytes_per_image == 512 && blocks[1].depth == 2 &&
             blocks[1].offset == 2048 && blocks[1].bytes_per_image == 128 && blocks[1].slice == 0,
         "a 3-D texture: one copy a level, bytes_per_image its slice pitch");

  TextureDescriptor big = volume;
  big.width = 4096, big.mip_levels = 1;
  expect_throws<ArgumentError>([&] { check_metal_texture(big); }, "3-D textures beyond 2048",
                               "[metal] a texture3d is at most 2048");
  TextureDescriptor slices = flat;
  slices.type = TextureType::texture2d_array, slices.array_length = 4096;
  expect_throws<ArgumentError>([&] { check_metal_texture(slices); }, "arrays beyond 2048 slices", "at most 2048 slices");
  flat.width = 16384;
  check_metal_texture(flat);
  flat.width = 16385;
  expect_throws<ArgumentError>([&] { check_metal_texture(flat); }, "2-D textures beyond 16384", "at most 16384");
}

}  // namespace

// P2.1 item 1: the kernels come from the source as Metal compiles it, checked against Metal's list.
void test_source_reflection() {
  const std::string source =
      "#include <metal_stdlib>\n"
      "#ifdef WIDE\nkernel void k(device T* x [[buffer(0)]]) {}\n#else\nkernel void k(device int* x [[buffer(0)]]) {}\n#endif\n"
      "#if 0\nkernel void gone(device float* x [[buffer(0)]]) {}\n#endif\n";
  // What a preprocessor makes of it with WIDE and T=float: one k, of floats, and a macro's kernel.
  const std::string preprocessed =
      "# 1 \"source.metal\"\n\nkernel void k(device float* x [[buffer(0)]]) {}\n"
      "kernel void made(device float* y [[buffer(0)]], uint i [[thread_position_in_grid]]) { y[i] = 0; }\n";
  msl::Macros seen;
  int runs = 0;
  const msl::Preprocessor preprocessor = [&](const std::string&, const msl::Macros& macros) {
    ++runs;
    seen = macros;
    return preprocessed;
  };
  const msl::SourceReflection r =
      msl::reflect_source(source, {{"WIDE", "1"}, {"T", "float"}}, preprocessor, metal_version_macro((3u << 16) + 1));
  expect(runs == 1, "a source with directives is preprocessed");
  // Apple's predefined macros for MSL 3.1 (__METAL__ from 3.0, __HAVE_BFLOAT__ from 3.1), Clang's
  // value macros (__FLT16_MAX__ ...), then the defines.
  const msl::Macros& clang = msl::clang_value_macros();
  const std::size_t n = seen.size();
  expect(n == 5 + clang.size() && seen[0] == std::make_pair(std::string("__METAL_VERSION__"), std::string("310")) &&
             seen[1].first == "__METAL__" && seen[2].first == "__HAVE_BFLOAT__" &&
             msl::Macros(seen.begin() + 3, seen.end() - 2) == clang && seen[n - 2].first == "WIDE" &&
             seen[n - 1] == std::make_pair(std::string("T"), std::string("float")),
         "the preprocessor gets the macros Apple's compiler predefines for the language version, then the defines");
  expect(r.kernels.size() == 2 && r.kernels[0].name == "k" && r.kernels[1].name == "made",
         "the kernels are the preprocessed source's");
  expect(r.kernels[0].params.size() == 1 && r.kernels[0].params[0].type_name == "float" &&
             r.kernels[0].params[0].scalar == ScalarType::f32,
         "a parameter type a macro names is known");
  expect(r.kernels[1].params[0].grid_indexed, "buffers indexed by the grid position are marked, as on the CPU");
  const msl::SourceReflection plain = msl::reflect_source(
      "#include <metal_stdlib>\nkernel void p(device half* h [[buffer(0)]]) {}\n", {}, preprocessor, 300);
  expect(runs == 1 && plain.kernels.size() == 1 && plain.kernels[0].params[0].scalar == ScalarType::f16,
         "a source without directives or defines is reflected as written, without the preprocessor");
  expect(metal_version_macro((2u << 16) + 4) == 240 && metal_version_macro(4u << 16) == 400, "__METAL_VERSION__");

  check_kernel_names({"k", "made"}, {"made", "k"}, "[metal]");  // the same kernels in another order
  expect_throws<CompileError>([] { check_kernel_names({"k", "gone"}, {"k"}, "[metal]"); },
                              "a kernel Metal lacks (a false #if read without preprocessing)",
                              "the front end found 'gone' that the compiled library does not have");
  expect_throws<CompileError>([] { check_kernel_names({"k"}, {"k", "made"}, "[metal]"); },
                              "a kernel the front end lacks (made by a macro)",
                              "[metal] the MSL front end and Metal disagree about the kernels of this source: "
                              "Metal lists 'made' that the front end did not find");
  expect_throws<CompileError>([] { check_kernel_names({"k", "k"}, {"k"}, "[metal]"); },
                              "a kernel found twice (#ifdef and #else read without preprocessing)",
                              "found 'k' more than once");
}

// P2.1 item 9: the GPU index 0 opens is chosen without MTLCreateSystemDefaultDevice.
void test_device_order() {
  auto order = [](std::vector<GpuTraits> gpus) { return device_order(gpus); };
  expect(order({}).empty(), "no GPU, no order");
  expect(order({{true, false}, {false, false}}) == std::vector<std::size_t>{1, 0},
         "a dual-GPU Mac: the built-in high-power GPU first");
  expect(order({{false, false}, {true, false}}) == std::vector<std::size_t>{0, 1}, "already first");
  expect(order({{false, true}, {true, false}}) == std::vector<std::size_t>{1, 0},
         "an eGPU and an integrated GPU: the built-in one first");
  expect(order({{false, true}, {false, true}}) == std::vector<std::size_t>{0, 1}, "only eGPUs: as listed");
}

int main() {
  test_source_reflection();
  test_device_order();
  test_compile_log();
  test_clang_style_line();
  test_language_version();
  test_merge_reflection();
  test_kernel_from_bindings();
  test_function_constants();
  test_specialisation();
  test_no_copy();
  test_staged_textures();
  if (failures) {
    std::printf("metal logic tests: %d of %d checks failed\n", failures, checks);
    return 1;
  }
  std::printf("metal logic tests: %d checks passed\n", checks);
  return 0;
}
