// Python bindings of Texture and Sampler: dev.texture(), dev.texture_from(),
// dev.sampler(), the buffer protocol over a texture's texels, and the textures= /
// samplers= keywords of a kernel call (docs/design.md "Textures and samplers").
#include <algorithm>
#include <cstring>

#include "bindings.hpp"
#include "metalcall/errors.hpp"
#include "metalcall/texture.hpp"

namespace metalcall::python {

namespace {

// PEP 3118 item format of one channel.
const char* channel_format(const PixelFormat& f) {
  if (f.packed()) return "I";  // rgb10a2, rg11b10, rgb9e5: the 32-bit word, red in its lowest bits
  switch (f.kind) {
    case PixelKind::unorm:
    case PixelKind::uint: return f.bits == 8 ? "B" : f.bits == 16 ? "H" : "I";
    case PixelKind::snorm:
    case PixelKind::sint: return f.bits == 8 ? "b" : f.bits == 16 ? "h" : "i";
    case PixelKind::float_: return f.bits == 16 ? "e" : "f";
  }
  return "B";
}

// The host view of mip level `level`: (w, c) for 1-D, (h, w, c) for 2-D, (slices, h, w, c) otherwise.
std::vector<py::ssize_t> view_shape(const Texture& t, std::uint32_t level = 0) {
  const auto& d = t.descriptor();
  const MipLevel& l = t.mip_level(level);
  const py::ssize_t c = d.format.channels, w = l.width, h = l.height;
  if (d.type == TextureType::texture1d || d.type == TextureType::texture_buffer) return {w, c};
  if (d.type == TextureType::texture1d_array) return {static_cast<py::ssize_t>(t.slices(level)), w, c};
  if (t.slices() == 1) return {h, w, c};
  return {static_cast<py::ssize_t>(t.slices(level)), h, w, c};
}

std::vector<py::ssize_t> view_strides(const Texture& t, std::uint32_t level = 0) {
  const py::ssize_t item = t.descriptor().format.bits / 8, pixel = item * t.descriptor().format.channels;
  const MipLevel& l = t.mip_level(level);
  const py::ssize_t row = static_cast<py::ssize_t>(l.row_pitch), slice = static_cast<py::ssize_t>(l.slice_pitch);
  if (t.descriptor().type == TextureType::texture1d || t.descriptor().type == TextureType::texture_buffer) return {pixel, item};
  if (t.descriptor().type == TextureType::texture1d_array) return {slice, pixel, item};
  if (t.slices() == 1) return {row, pixel, item};
  return {slice, row, pixel, item};
}

// Waits for submitted work that uses the texture; its memory must be the host's.
void wait_for_host(const Texture& t) {
  if (!t.storage().host_visible()) throw ArgumentError("this texture's memory is not visible to the host");
  GilRelease release;
  t.storage().wait_idle();
}

// mip_levels=: a count, or "full" for the whole chain down to 1x1.
std::uint32_t mip_levels_from(const py::handle& value, const TextureDescriptor& d) {
  if (py::isinstance<py::str>(value)) {
    if (value.cast<std::string>() == "full") return full_mip_levels(d);
    throw ArgumentError("mip_levels takes a count or \"full\", got '" + value.cast<std::string>() + "'");
  }
  if (!py::isinstance<py::int_>(value) || py::isinstance<py::bool_>(value))
    throw ArgumentError("mip_levels takes a count or \"full\"");
  const long long n = value.cast<long long>();
  if (n < 1 || n > 1000) throw ArgumentError("a texture has at least 1 mip level, got " + std::to_string(n));
  return static_cast<std::uint32_t>(n);
}

TextureType type_from_name(const std::string& name) {
  for (int i = 1; i <= static_cast<int>(TextureType::texture_buffer); ++i)
    if (name == to_string(static_cast<TextureType>(i))) return static_cast<TextureType>(i);
  throw ArgumentError("unknown texture type '" + name + "'; use texture1d, texture1d_array, texture2d, texture3d, texture2d_array, "
                      "texturecube, texturecube_array, depth2d, depth2d_array, depthcube, depthcube_array, texture2d_ms, "
                      "texture2d_ms_array, depth2d_ms, depth2d_ms_array or texture_buffer");
}

unsigned usage_from(const py::handle& usage) {
  if (usage.is_none()) return usage_read | usage_write;
  std::vector<std::string> words;
  if (py::isinstance<py::str>(usage)) words.push_back(usage.cast<std::string>());
  else for (const auto& u : py::iter(usage)) words.push_back(py::str(u));
  unsigned out = 0;
  for (const auto& w : words) {
    if (w == "read") out |= usage_read;
    else if (w == "write") out |= usage_write;
    else if (w == "read_write") out |= usage_read | usage_write;
    else throw ArgumentError("unknown texture usage '" + w + "'; use \"read\", \"write\" or \"read_write\"");
  }
  return out;
}

// shape: (w,), (h, w), (d, h, w) for texture3d, (n, h, w) for the array types (n elements: cubes
// for the cube arrays), (size, size) for a cube. `from_view`: shape is a host view's (its
// leading size counts 2-D images: 6 per cube, sample_count per element; texture_from).
Texture make_texture(const Device& dev, std::vector<std::uint32_t> shape, const std::string& format,
                     const py::handle& usage, const py::handle& type, const py::handle& mip_levels,
                     std::uint32_t sample_count, bool from_view = false) {
  TextureDescriptor d;
  d.format = PixelFormat::parse(format);
  d.usage = usage_from(usage);
  d.sample_count = sample_count;
  if (!type.is_none()) {
    d.type = type_from_name(type.cast<std::string>());
  } else {
    d.type = shape.size() == 1 ? TextureType::texture1d : shape.size() == 2 ? TextureType::texture2d : TextureType::texture3d;
  }
  const bool single_cube = d.type == TextureType::texturecube || d.type == TextureType::depthcube;
  if (from_view && single_cube && shape.size() == 3) {
    if (shape[0] != 6) throw ArgumentError("texture_from: a cube texture's array holds 6 faces, got " + std::to_string(shape[0]));
    shape.erase(shape.begin());
  }
  if (from_view && shape.size() == 3 && (is_cube(d.type) || is_multisample(d.type)) && is_array(d.type)) {
    const std::uint32_t per = is_cube(d.type) ? 6 : std::max<std::uint32_t>(1, sample_count);
    if (shape[0] % per != 0)
      throw ArgumentError("texture_from: a " + std::string(to_string(d.type)) + "'s array holds " + std::to_string(per) +
                          " images per element, got " + std::to_string(shape[0]));
    shape[0] /= per;
  }
  const bool one_d_array = d.type == TextureType::texture1d_array;
  const std::size_t want = d.type == TextureType::texture1d || d.type == TextureType::texture_buffer ? 1
                           : one_d_array                                                              ? 2
                           : d.type == TextureType::texture3d || is_array(d.type)                     ? 3
                                                                                                      : 2;
  if (shape.size() != want) {
    throw ArgumentError(std::string("a ") + to_string(d.type) + " has a shape of " + std::to_string(want) +
                        " sizes (" + (want == 1 ? "width" : one_d_array ? "elements, width" : want == 2 ? "height, width" :
                        "depth or elements, height, width") + "), got " + std::to_string(shape.size()));
  }
  d.width = shape.back();
  if (want >= 2 && !one_d_array) d.height = shape[want - 2];
  if (d.type == TextureType::texture3d) d.depth = shape[0];
  if (is_array(d.type)) d.array_length = shape[0];
  d.mip_levels = mip_levels_from(mip_levels, d);
  return dev.texture(d);
}

PixelFormat format_of(const py::array& a) {
  const char kind = a.dtype().kind();
  const int bits = static_cast<int>(a.dtype().itemsize()) * 8;
  PixelFormat f;
  f.bits = bits;
  if (kind == 'f' && (bits == 16 || bits == 32)) f.kind = PixelKind::float_;
  else if (kind == 'u' && bits <= 32) f.kind = bits == 32 ? PixelKind::uint : PixelKind::unorm;
  else if (kind == 'i' && bits <= 32) f.kind = bits == 32 ? PixelKind::sint : PixelKind::snorm;
  else throw ArgumentError("texture_from: no pixel format holds " + std::string(py::str(a.dtype())) + "; give format=");
  return f;
}

}  // namespace

py::dtype texel_dtype(const Texture& texture) { return py::dtype(channel_format(texture.descriptor().format)); }

bool parse_texture_option(const std::string& name, const py::handle& value, LaunchShape& shape) {
  if (name == "textures") {
    if (!value.is_none())
      for (const auto& t : py::iter(value)) shape.textures.push_back(t.is_none() ? Texture() : t.cast<Texture>());
    return true;
  }
  if (name == "samplers") {
    if (!value.is_none())
      for (const auto& s : py::iter(value)) shape.samplers.push_back(s.cast<Sampler>());
    return true;
  }
  return false;
}

void init_texture(py::module_& m) {
  py::class_<Texture>(m, "Texture", py::buffer_protocol(), R"doc(
A texture for a kernel's [[texture(i)]] parameter: texels in device memory that the
host reads and writes in place. ``np.asarray(tex)`` is a zero-copy view of shape
(height, width, channels) for 2-D textures ((width, channels) for 1-D, (slices, height,
width, channels) for 3-D, arrays and cubes), rows ``row_pitch`` bytes apart; taking one
waits for submitted work that uses the texture. Normalized formats show their raw
integers (rgba8unorm: uint8). Made by Device.texture() and Device.texture_from().
)doc")
      .def_buffer([](Texture& t) {
        wait_for_host(t);
        const PixelFormat& f = t.descriptor().format;
        const auto shape = view_shape(t);
        return py::buffer_info(t.storage().data(), f.bits / 8, channel_format(f), static_cast<py::ssize_t>(shape.size()),
                               shape, view_strides(t), /*readonly=*/false);
      })
      .def_property_readonly("width", [](const Texture& t) { return t.descriptor().width; })
      .def_property_readonly("height", [](const Texture& t) { return t.descriptor().height; })
      .def_property_readonly("depth", [](const Texture& t) { return t.descriptor().depth; })
      .def_property_readonly("array_length", [](const Texture& t) { return t.descriptor().array_length; })
      .def_property_readonly("format", [](const Texture& t) { return t.descriptor().format.name(); })
      .def_property_readonly("texture_type", [](const Texture& t) { return std::string(to_string(t.descriptor().type)); })
      .def_property_readonly("mip_levels", &Texture::mip_levels, "Mip levels (1: the image alone).")
      .def_property_readonly("sample_count", [](const Texture& t) { return t.descriptor().sample_count; },
                             "Samples per texel (multisampled types; else 1).")
      .def("level", [](const py::object& self, long long level) {
        const Texture& t = self.cast<const Texture&>();
        if (level < 0) throw ArgumentError("mip level " + std::to_string(level) + " does not exist: levels count from 0");
        const MipLevel& l = t.mip_level(static_cast<std::uint32_t>(std::min<long long>(level, 1ll << 31)));
        wait_for_host(t);
        const PixelFormat& f = t.descriptor().format;
        auto* data = static_cast<std::uint8_t*>(t.storage().data()) + l.offset;
        const auto i = static_cast<std::uint32_t>(level);
        return py::array(py::dtype(channel_format(f)), view_shape(t, i), view_strides(t, i), data, self);
      }, py::arg("level"), R"doc(A zero-copy NumPy view of mip level ``level`` (0 is what np.asarray(tex)
shows): each level halves the width and height (and a 3-D texture's depth), down to 1;
waits for submitted work that uses the texture.)doc")
      .def_property_readonly("row_pitch", &Texture::row_pitch, "Bytes from one row to the next.")
      .def_property_readonly("slice_pitch", &Texture::slice_pitch, "Bytes from one 2-D image to the next.")
      .def_property_readonly("nbytes", [](const Texture& t) { return t.storage().nbytes(); })
      .def_property_readonly("shape", [](const Texture& t) { return py::tuple(py::cast(view_shape(t))); })
      .def("__repr__", [](const Texture& t) {
        const auto& d = t.descriptor();
        return "<metalcall.Texture " + std::string(to_string(d.type)) + " " + d.format.name() + " " +
               std::to_string(d.width) + "x" + std::to_string(d.height) +
               (t.slices() > 1 ? "x" + std::to_string(t.slices()) : std::string()) +
               (t.mip_levels() > 1 ? " mip_levels=" + std::to_string(t.mip_levels()) : std::string()) + ">";
      });

  py::class_<Sampler>(m, "Sampler", R"doc(
A sampler for a kernel's [[sampler(i)]] parameter (Device.sampler()): filter, address
modes and coordinate kind, as MSL's constexpr sampler declares them.
)doc")
      .def_property_readonly("filter", [](const Sampler& s) { return std::string(to_string(s.mag_filter)); })
      .def_property_readonly("min_filter", [](const Sampler& s) { return std::string(to_string(s.min_filter)); })
      .def_property_readonly("mag_filter", [](const Sampler& s) { return std::string(to_string(s.mag_filter)); })
      .def_property_readonly("mip_filter", [](const Sampler& s) { return std::string(to_string(s.mip_filter)); })
      .def_property_readonly("lod_clamp", [](const Sampler& s) { return py::make_tuple(s.lod_min_clamp, s.lod_max_clamp); })
      .def_property_readonly("compare_func", [](const Sampler& s) { return std::string(to_string(s.compare_func)); })
      .def_property_readonly("address", [](const Sampler& s) {
        return py::make_tuple(to_string(s.s_address), to_string(s.t_address), to_string(s.r_address));
      })
      .def_property_readonly("normalized", [](const Sampler& s) { return s.normalized_coordinates; })
      .def("__repr__", [](const Sampler& s) {
        const std::string filter = s.min_filter == s.mag_filter
                                       ? std::string(" filter=") + to_string(s.mag_filter)
                                       : std::string(" min_filter=") + to_string(s.min_filter) + " mag_filter=" + to_string(s.mag_filter);
        return "<metalcall.Sampler" + filter + " address=" + to_string(s.s_address) +
               (s.mip_filter != SamplerMipFilter::none ? std::string(" mip_filter=") + to_string(s.mip_filter) : std::string()) +
               " normalized=" + (s.normalized_coordinates ? "True" : "False") + ">";
      });

  py::object device = m.attr("Device");
  py::setattr(device, "texture", py::cpp_function(
      [](const Device& dev, const std::vector<std::uint32_t>& shape, const std::string& format, const py::object& usage,
         const py::object& type, const py::object& mip_levels, std::uint32_t sample_count) {
        return make_texture(dev, shape, format, usage, type, mip_levels, sample_count);
      },
      py::name("texture"), py::is_method(device), py::sibling(py::getattr(device, "texture", py::none())),
      py::arg("shape"), py::arg("format") = "rgba8unorm", py::arg("usage") = py::none(), py::arg("type") = py::none(),
      py::arg("mip_levels") = 1, py::arg("sample_count") = 1,
      R"doc(A new zeroed texture. ``shape``: (width,), (height, width), or (depth, height, width) for
texture3d / (elements, height, width) for the array types (type="texture2d_array",
"texturecube_array" (elements are cubes), "depth2d_array", "depthcube_array",
"texture2d_ms_array", "depth2d_ms_array"); "texturecube" / "depthcube" take (size, size);
the multisampled types (texture2d_ms...) take ``sample_count`` 1, 2, 4 or 8; the depth types
format "r32float"; "texture1d_array" takes (elements, width), "texture_buffer" (width,). ``format``:
Metal's name ("rgba8unorm", "r32float", "rg16sint", "bgra8unorm_srgb", "rgb10a2unorm", "rg11b10float",
"rgb9e5float"...: packed formats show one uint32 word per texel); ``usage``:
"read", "write" or "read_write" (default), or a list of them. ``mip_levels``: 1 (default),
a count up to the full chain, or "full" (each level halves the sizes down to 1; tex.level(i)
views one).)doc"));
  py::setattr(device, "texture_from", py::cpp_function(
      [](const Device& dev, const py::array& source, const py::object& format, const py::object& usage,
         const py::object& type, const py::object& mip_levels, std::uint32_t sample_count) {
        // (h, w, c) → 2-D texture with c channels; (h, w) → one channel; (d, h, w, c) → 3-D (or type=).
        const py::ssize_t nd = source.ndim();
        PixelFormat f = format_of(source);
        std::vector<std::uint32_t> shape;
        const bool has_channels = nd >= 3 || (nd == 2 && !type.is_none() && (type.cast<std::string>() == "texture1d" ||
                                                                            type.cast<std::string>() == "texture_buffer"));
        const py::ssize_t spatial = has_channels ? nd - 1 : nd;
        f.channels = has_channels ? static_cast<int>(source.shape(nd - 1)) : 1;
        if (spatial < 1 || spatial > 3 || (f.channels != 1 && f.channels != 2 && f.channels != 4)) {
          // Name the shape: a (h, w, 3) RGB image has a valid rank, and Metal has no 3-channel formats.
          std::string got = "(";
          for (py::ssize_t i = 0; i < nd; ++i) got += (i ? ", " : "") + std::to_string(source.shape(i));
          throw ArgumentError("texture_from: expected an array of shape (h, w), (h, w, c) or (d, h, w, c) with c in "
                              "1, 2, 4 (Metal has no 3-channel formats: add an alpha channel); got shape " +
                              got + (nd == 1 ? ",)" : ")"));
        }
        for (py::ssize_t i = 0; i < spatial; ++i) shape.push_back(static_cast<std::uint32_t>(source.shape(i)));
        const std::string name = format.is_none() ? f.name() : format.cast<std::string>();
        const PixelFormat chosen = PixelFormat::parse(name);
        if (chosen.bytes_per_pixel() != f.bytes_per_pixel() || chosen.channels != f.channels)
          throw ArgumentError("texture_from: format " + name + " does not match the array's dtype and channels (" + f.name() + ")");
        Texture t = make_texture(dev, shape, name, usage, type, mip_levels, sample_count, /*from_view=*/true);
        // Row by row: the texture's rows may be padded.
        py::array contiguous = py::array::ensure(source, py::array::c_style);
        const auto* src = static_cast<const std::uint8_t*>(contiguous.data());
        const std::size_t row = t.descriptor().width * chosen.bytes_per_pixel();
        const std::size_t rows = static_cast<std::size_t>(t.descriptor().height) * t.slices();
        auto* dst = static_cast<std::uint8_t*>(t.storage().data());
        for (std::size_t r = 0; r < rows; ++r) {
          const std::size_t slice = r / t.descriptor().height, y = r % t.descriptor().height;
          std::memcpy(dst + slice * t.slice_pitch() + y * t.row_pitch(), src + r * row, row);
        }
        return t;
      },
      py::name("texture_from"), py::is_method(device), py::arg("array"), py::arg("format") = py::none(),
      py::arg("usage") = py::none(), py::arg("type") = py::none(), py::arg("mip_levels") = 1, py::arg("sample_count") = 1,
      R"doc(A texture holding a copy of a NumPy array of shape (h, w) or (h, w, channels) (channels 1,
2 or 4; (d, h, w, c) for 3-D; for the array, cube and multisampled types, the shape np.asarray
shows: (images, h, w, c), 6 images per cube, sample_count per element). The format follows the dtype (uint8 → r/rg/rgba8unorm,
float32 → ...32float, int32 → ...32sint, ...) unless ``format`` names another of the same size.
With ``mip_levels`` > 1 the array fills level 0 and the other levels start zeroed.)doc"));
  py::setattr(device, "sampler", py::cpp_function(
      [](const Device&, const std::string& filter, const py::object& address, bool normalized,
         const std::string& border_color, const std::string& mip_filter, const py::object& min_filter,
         const py::object& mag_filter, const std::pair<float, float>& lod_clamp, const std::string& compare_func) {
        Sampler s;
        s.mag_filter = s.min_filter = sampler_filter_from_name(filter);
        if (!min_filter.is_none()) s.min_filter = sampler_filter_from_name(min_filter.cast<std::string>());
        if (!mag_filter.is_none()) s.mag_filter = sampler_filter_from_name(mag_filter.cast<std::string>());
        s.mip_filter = sampler_mip_filter_from_name(mip_filter);
        const float lo = lod_clamp.first, hi = lod_clamp.second;
        if (!(lo >= 0.0f) || !(hi >= lo))
          throw ArgumentError("lod_clamp takes (min, max) with 0 <= min <= max, got (" + std::to_string(lo) + ", " +
                              std::to_string(hi) + ")");
        s.lod_min_clamp = lo, s.lod_max_clamp = hi;
        s.compare_func = sampler_compare_from_name(compare_func);
        if (py::isinstance<py::str>(address)) {
          s.s_address = s.t_address = s.r_address = sampler_address_from_name(address.cast<std::string>());
        } else {
          const auto modes = address.cast<std::vector<std::string>>();
          if (modes.empty() || modes.size() > 3) throw ArgumentError("address takes one mode or a list of 1 to 3 (s, t, r)");
          SamplerAddress* slots[3] = {&s.s_address, &s.t_address, &s.r_address};
          for (std::size_t i = 0; i < 3; ++i) *slots[i] = sampler_address_from_name(modes[std::min(i, modes.size() - 1)]);
        }
        s.normalized_coordinates = normalized;
        if (border_color == "transparent_black") s.border_color = SamplerBorder::transparent_black;
        else if (border_color == "opaque_black") s.border_color = SamplerBorder::opaque_black;
        else if (border_color == "opaque_white") s.border_color = SamplerBorder::opaque_white;
        else throw ArgumentError("unknown border_color '" + border_color + "'; use transparent_black, opaque_black or opaque_white");
        return s;
      },
      py::name("sampler"), py::is_method(device), py::arg("filter") = "nearest", py::arg("address") = "clamp_to_edge",
      py::arg("normalized") = true, py::arg("border_color") = "transparent_black", py::arg("mip_filter") = "none",
      py::arg("min_filter") = py::none(), py::arg("mag_filter") = py::none(),
      py::arg("lod_clamp") = std::pair<float, float>(0.0f, 3.402823466e+38f), py::arg("compare_func") = "none",
      R"doc(A sampler: ``filter`` "nearest" or "linear" (``min_filter`` / ``mag_filter`` set one of them);
``address`` clamp_to_edge, mirrored_clamp_to_edge, repeat, mirrored_repeat, clamp_to_zero or
clamp_to_border (one for all axes, or a list s, t, r); ``normalized``: coordinates in [0, 1]
(True) or in texels (False); ``mip_filter`` "none" (level 0), "nearest" or "linear" between
mip levels; ``lod_clamp``: (min, max) bounds of the LOD; ``compare_func``: the test of
depth2d's sample_compare / gather_compare (reference OP texel: less, less_equal, greater,
greater_equal, equal, not_equal, always, never; "none" by default).)doc"));
}

}  // namespace metalcall::python
