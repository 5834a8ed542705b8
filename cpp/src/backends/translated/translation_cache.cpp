// The front end's result on disk (see translation_cache.hpp): the key, and the
// entry format written and read field by field with every length and enum checked.
#include "backends/translated/translation_cache.hpp"

#include <cstdint>
#include <dlfcn.h>
#include <sstream>
#include <sys/stat.h>

#include "backends/translated/host_cxx.hpp"
#include "core/disk_cache.hpp"
#include "core/hash.hpp"

namespace metalcall::translated {

namespace {

// Bump when the entry format changes (the binary fingerprint covers most changes;
// this covers an entry read by a build that happens to share one).
// 4: ParamInfo::function_constant (enabled is per specialisation: not stored)
// 2: ParamInfo::grid_indexed, 3: texture type and access, 5: loop_free, 6: runs_regions,
// 7: texture_count, texture_atomics and the layered / multisampled texture types
// 8: FunctionConstantInfo::vector_width, 9: texture1d_array, texture_buffer
constexpr char kMagic[] = "metalcall translation 10\n";  // 10: ParamInfo::matrix_scalar, enum scalars

// ---- writing ----

class Writer {
 public:
  void u8(unsigned v) { out_.push_back(static_cast<char>(v & 0xff)); }
  void u64(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) u8(static_cast<unsigned>(v >> (8 * i)));
  }
  void i64(std::int64_t v) { u64(static_cast<std::uint64_t>(v)); }
  void str(const std::string& s) {
    u64(s.size());
    out_ += s;
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_ = kMagic;
};

// ---- reading: every read checks the bytes left; a failure sticks ----

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {
    const std::string_view magic(kMagic);
    if (in_.substr(0, magic.size()) != magic) ok_ = false;
    else in_.remove_prefix(magic.size());
  }
  bool ok() const { return ok_; }
  bool at_end() const { return ok_ && in_.empty(); }

  unsigned u8() {
    if (!ok_ || in_.empty()) return fail();
    const unsigned v = static_cast<unsigned char>(in_[0]);
    in_.remove_prefix(1);
    return v;
  }
  std::uint64_t u64() {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(u8()) << (8 * i);
    return v;
  }
  std::int64_t i64() { return static_cast<std::int64_t>(u64()); }
  /** An int that must lie in [lo, hi]. */
  int integer(std::int64_t lo, std::int64_t hi) {
    const std::int64_t v = i64();
    if (v < lo || v > hi) return fail();
    return static_cast<int>(v);
  }
  bool flag() { return integer(0, 1) != 0; }
  std::string str() {
    const std::uint64_t n = u64();
    if (!ok_ || n > in_.size()) return fail(), std::string();
    std::string s(in_.substr(0, static_cast<std::size_t>(n)));
    in_.remove_prefix(static_cast<std::size_t>(n));
    return s;
  }
  /** A count of items each at least `min_item_bytes` long: never more than the bytes left allow. */
  std::size_t count(std::size_t min_item_bytes) {
    const std::uint64_t n = u64();
    if (!ok_ || n > in_.size() / min_item_bytes) return fail();
    return static_cast<std::size_t>(n);
  }
  template <class Enum>
  Enum enumeration(Enum last) {
    return static_cast<Enum>(integer(0, static_cast<int>(last)));
  }

 private:
  unsigned fail() {
    ok_ = false;
    in_ = {};
    return 0;
  }
  std::string_view in_;
  bool ok_ = true;
};

constexpr std::int64_t kIntMax = 0x7fffffff, kIntMin = -kIntMax - 1;

// Every field of ParamInfo, in declaration order (reflection.hpp): a field added
// there must be added here, or the round-trip test in test_compile_cache.py fails.
void write_param(Writer& w, const ParamInfo& p) {
  w.i64(p.position);
  w.i64(p.binding);
  w.str(p.name);
  w.i64(static_cast<int>(p.kind));
  w.i64(static_cast<int>(p.address_space));
  w.str(p.type_name);
  w.i64(static_cast<int>(p.scalar));
  w.i64(p.vector_width);
  w.i64(static_cast<int>(p.matrix_scalar));
  w.i64(p.is_const);
  w.i64(static_cast<int>(p.builtin));
  w.i64(p.builtin_width);
  w.u64(p.element_size);
  w.u64(p.element_align);
  w.i64(p.line);
  w.i64(p.column);
  w.i64(p.grid_indexed);
  w.i64(static_cast<int>(p.texture_type));
  w.i64(static_cast<int>(p.texture_access));
  w.i64(p.texture_count);
  w.str(p.function_constant);
}

ParamInfo read_param(Reader& r) {
  ParamInfo p;
  p.position = r.integer(kIntMin, kIntMax);
  p.binding = r.integer(kIntMin, kIntMax);  // may be msl::kDeferredBinding
  p.name = r.str();
  p.kind = r.enumeration(ParamKind::sampler);
  p.address_space = r.enumeration(AddressSpace::thread);
  p.type_name = r.str();
  p.scalar = r.enumeration(ScalarType::f64);
  p.vector_width = r.integer(kIntMin, kIntMax);
  p.matrix_scalar = r.enumeration(ScalarType::f64);
  p.is_const = r.flag();
  p.builtin = r.enumeration(Builtin::grid_size);
  p.builtin_width = r.integer(kIntMin, kIntMax);
  p.element_size = static_cast<std::size_t>(r.u64());
  p.element_align = static_cast<std::size_t>(r.u64());
  p.line = r.integer(kIntMin, kIntMax);
  p.column = r.integer(kIntMin, kIntMax);
  p.grid_indexed = r.flag();
  p.texture_type = r.enumeration(TextureType::texture_buffer);
  p.texture_access = r.enumeration(TextureAccess::read_write);
  p.texture_count = r.integer(0, 1 << 16);
  p.function_constant = r.str();
  return p;
}

// Every field of TranslatedKernel and its KernelInfo.
void write_kernel(Writer& w, const msl::TranslatedKernel& k) {
  w.str(k.info.name);
  w.u64(k.info.params.size());
  for (const auto& p : k.info.params) write_param(w, p);
  w.u64(k.info.max_total_threads_per_threadgroup);
  w.u64(k.info.declared_max_threads);
  w.i64(k.info.line);
  w.i64(k.uses_fibers);
  w.i64(k.runs_regions);
  w.i64(k.info.loop_free);
  w.i64(k.info.texture_atomics);
  w.str(k.entry_symbol);
  w.str(k.layout_symbol);
}

msl::TranslatedKernel read_kernel(Reader& r) {
  msl::TranslatedKernel k;
  k.info.name = r.str();
  const std::size_t params = r.count(16);
  for (std::size_t i = 0; i < params && r.ok(); ++i) k.info.params.push_back(read_param(r));
  k.info.max_total_threads_per_threadgroup = static_cast<unsigned>(r.integer(0, 0xffffffffLL));
  k.info.declared_max_threads = static_cast<unsigned>(r.integer(0, 0xffffffffLL));
  k.info.line = r.integer(kIntMin, kIntMax);
  k.uses_fibers = r.flag();
  k.runs_regions = r.flag();
  k.info.loop_free = r.flag();
  k.info.texture_atomics = r.flag();
  k.entry_symbol = r.str();
  k.layout_symbol = r.str();
  return k;
}

// The metalcall binary that holds the translator: its path, size, times and inode.
// Any rebuild or reinstall changes it, so entries from another translator (or
// prelude, which is embedded) are never read. Empty when it cannot be found.
const std::string& binary_fingerprint() {
  static const auto& fingerprint = *new std::string([] {
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&serialize_translation), &info) == 0 || !info.dli_fname) return std::string();
    struct stat st;
    if (stat(info.dli_fname, &st) != 0) return std::string();
    std::ostringstream out;
#ifdef __APPLE__
    const struct timespec& modified = st.st_mtimespec;
#else
    const struct timespec& modified = st.st_mtim;
#endif
    out << info.dli_fname << "\n"
        << st.st_size << " " << st.st_ino << " " << st.st_dev << " " << modified.tv_sec << "." << modified.tv_nsec;
    return out.str();
  }());
  return fingerprint;
}

}  // namespace

std::string serialize_translation(const msl::Translation& translation) {
  Writer w;
  w.u64(translation.kernels.size());
  for (const auto& k : translation.kernels) write_kernel(w, k);
  w.u64(translation.function_constants.size());
  for (const auto& c : translation.function_constants) {
    w.str(c.name);
    w.i64(c.index);
    w.i64(static_cast<int>(c.scalar));
    w.str(c.type_name);
    w.i64(c.vector_width);
  }
  w.str(translation.code);
  return w.take();
}

std::optional<msl::Translation> deserialize_translation(std::string_view bytes) {
  Reader r(bytes);
  msl::Translation translation;
  const std::size_t kernels = r.count(16);
  for (std::size_t i = 0; i < kernels && r.ok(); ++i) translation.kernels.push_back(read_kernel(r));
  const std::size_t constants = r.count(16);
  for (std::size_t i = 0; i < constants && r.ok(); ++i) {
    msl::FunctionConstantInfo c;
    c.name = r.str();
    c.index = r.integer(kIntMin, kIntMax);
    c.scalar = r.enumeration(ScalarType::f64);
    c.type_name = r.str();
    c.vector_width = r.integer(1, 4);
    translation.function_constants.push_back(std::move(c));
  }
  translation.code = r.str();
  if (!r.at_end() || translation.code.empty()) return std::nullopt;
  return translation;
}

TranslationCache::TranslationCache(const std::string& source, const msl::FrontEndOptions& options) {
  if (binary_fingerprint().empty()) return;
  ContentHash h;
  h.add(kMagic).add(binary_fingerprint()).add(std::to_string(msl::kTranslatorVersion));
  h.add(options.target == msl::Target::cuda ? "cuda" : "cpu").add(options.checked ? "checked" : "unchecked");
  // The preprocessor's output feeds the translator when the source needs one; only then is the
  // host compiler looked for (with a new cache folder, each candidate's `--version` runs: about
  // 25 ms of a CUDA compile that needs no host compiler at all).
  if (msl::needs_preprocessing(source, options.defines)) h.add(HostCxx::instance().identity());
  else h.add("no preprocessor");
  h.add(source);
  h.add(std::to_string(options.defines.size()));
  for (const auto& [name, value] : options.defines) h.add(name).add(value);
  h.add("language " + options.language_version);
  h.add(options.poison_threadgroup ? "threadgroup poisoned" : "threadgroup as left");
  h.add(std::to_string(options.constants.size()));
  for (const auto& [index, literal] : options.constants) h.add(std::to_string(index)).add(literal);
  key_ = h.hex();
}

std::optional<msl::Translation> TranslationCache::load() const {
  if (key_.empty()) return std::nullopt;
  auto entry = DiskCache("translations").load_entry(key_, ".tr");
  if (!entry) return std::nullopt;
  return deserialize_translation(*entry);
}

void TranslationCache::save(const msl::Translation& translation) const {
  if (key_.empty()) return;
  DiskCache("translations").save_entry(key_, ".tr", serialize_translation(translation));
}

}  // namespace metalcall::translated
