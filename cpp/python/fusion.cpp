// metalcall.numpy's fused elementwise kernels, the per-evaluation host path (numpy/_fusion.py):
// the walk over a lazy expression's nodes, and, for an expression whose structure was seen
// before, the kernel's arguments and its launch. In Python the walk, the argument list and the
// cache lookups took ~60% of an evaluation's host time (8.6 µs of `(mnp.sin(x)*y+2).evaluate()`
// on the 2-core box, 37 of 52 on the H200's host), which decides fused chains up to 1e7 elements.
//
// The walk is the one implementation: the Python side asks it for the entries the MSL is
// generated from (describe) when a structure is new, and registers the compiled kernel under the
// walk's key; later evaluations of that structure launch from here. Everything runs under the GIL.
#include <cstdint>
#include <cstring>
#include <optional>
#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "bindings.hpp"
#include "slots.hpp"

namespace metalcall::python {

namespace {

// The node classes of _fusion.py and the offsets of their __slots__ (read in place, as CPython's
// member descriptors do: an attribute lookup per read cost more than the rest of the walk).
struct NodeTypes : NodeSlots {
  PyObject* scalar_bytes = nullptr;  // _fusion._scalar_bytes(value, dtype) -> bytes
  PyObject* params = nullptr;        // _fusion._params(device, values) -> Buffer
};
NodeTypes g_types;

PyObject* read_slot(PyObject* o, Py_ssize_t offset, const char* name) {
  PyObject* v = slot_value(o, offset);
  if (!v) throw py::attribute_error(std::string("metalcall.numpy: a fusion node has no ") + name);
  return v;  // borrowed: the node holds it
}

long long as_int(PyObject* o) {
  const long long v = PyLong_AsLongLong(o);
  if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
  return v;
}

using Ints = std::vector<long long>;

Ints ints_of(PyObject* tuple) {
  if (!PyTuple_Check(tuple)) throw py::type_error("metalcall.numpy: a shape or strides is not a tuple");
  const Py_ssize_t n = PyTuple_GET_SIZE(tuple);
  Ints out(static_cast<std::size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = as_int(PyTuple_GET_ITEM(tuple, i));
  return out;
}

// _fusion.contiguous_strides
Ints contiguous_strides(const Ints& shape) {
  Ints out(shape.size());
  long long acc = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    out[i] = acc;
    acc *= std::max<long long>(shape[i], 1);
  }
  return out;
}

// _fusion.is_c_layout: the strides walk the shape C-contiguously (size-1 dimensions: any stride).
bool is_c_layout(const Ints& shape, const Ints& strides) {
  const Ints c = contiguous_strides(shape);
  for (std::size_t i = 0; i < shape.size() && i < strides.size(); ++i)
    if (shape[i] != 1 && strides[i] != c[i]) return false;
  return true;
}

// _fusion.broadcast_strides
Ints broadcast_strides(const Ints& shape, const Ints& strides, const Ints& out_shape) {
  if (shape.size() > out_shape.size()) throw py::value_error("metalcall.numpy: a fused input has more dimensions than its result");
  Ints out(out_shape.size(), 0);
  const std::size_t pad = out_shape.size() - shape.size();
  for (std::size_t k = 0; k < shape.size(); ++k)
    if (shape[k] != 1) out[pad + k] = strides[k];
  return out;
}

// A dtype in the key as (kind, itemsize): numpy dtypes of one kind and size compare equal (mnp's
// are all native). Found once per dtype object, which is kept (its address stays its own).
std::uint16_t dtype_code(PyObject* dtype) {
  static auto& codes = *new std::unordered_map<PyObject*, std::uint16_t>;  // never destroyed: holds references
  const auto hit = codes.find(dtype);
  if (hit != codes.end()) return hit->second;
  py::handle h(dtype);
  const std::string kind = py::str(h.attr("kind"));
  const auto size = h.attr("itemsize").cast<unsigned>();
  if (kind.size() != 1 || size > 255) throw py::type_error("metalcall.numpy: an unexpected dtype in a fused expression");
  const auto code = static_cast<std::uint16_t>((static_cast<unsigned char>(kind[0]) << 8) | size);
  if (codes.size() < 256) codes.emplace(h.inc_ref().ptr(), code);  // mnp's dtypes are a few singletons
  return code;
}

void put16(std::string& key, unsigned v) {
  key.push_back(static_cast<char>(v & 0xff));
  key.push_back(static_cast<char>(v >> 8));
}

// The entry kinds of _fusion's generator: "c0" C-contiguous from element 0, "c" from an offset,
// "z" broadcast (every stride 0), "s" strided; "sb" and "su" strided with a last stride of 0 and 1
// (a kernel on rows then reads a row's elements as one value or contiguously).
const char* kind_name(char kind) {
  switch (kind) {
    case '0': return "c0";
    case 'c': return "c";
    case 'z': return "z";
    case 'b': return "sb";
    case 'u': return "su";
    default: return "s";
  }
}

// 's' refined by the last stride (kind_name).
char strided_kind(const Ints& strides) {
  if (strides.empty()) return 's';
  return strides.back() == 0 ? 'b' : strides.back() == 1 ? 'u' : 's';
}

struct Input {
  PyObject* buf;  // borrowed: reachable from the items
  PyObject* dtype;
  long long offset;
  Ints bstrides;
  char kind;
  std::size_t key_at;  // where its kind is in the key
  Py_ssize_t described_at;  // its entry in the described list (describing only)
};

struct Output {
  int slot;
  PyObject* buf;
  PyObject* dtype;
  long long offset;
  Ints strides;
  char kind;
  std::size_t key_at;
};

char input_kind(const Ints& shape, long long offset, const Ints& bstrides) {
  if (is_c_layout(shape, bstrides)) return offset == 0 ? '0' : 'c';
  if (std::all_of(bstrides.begin(), bstrides.end(), [](long long v) { return v == 0; })) return 'z';
  return strided_kind(bstrides);
}

char output_kind(const Ints& shape, long long offset, const Ints& strides) {
  return is_c_layout(shape, strides) ? (offset == 0 ? '0' : 'c') : strided_kind(strides);
}

// One pass over the DAG, as the generator needs it: the distinct inputs (buffer, offset, broadcast
// strides, dtype), the scalars, and the key of the computation (every entry, in order). With
// `describe`, also the entries as the generator's tuples.
class Walk {
 public:
  Walk(const Ints& shape, bool describe) : shape_(shape), describe_(describe) {
    key_.push_back(static_cast<char>(shape.size()));
    if (describe) described_.emplace();
  }

  int slot(PyObject* node) {
    for (const auto& [n, s] : slots_)
      if (n == node) return s;
    if (++depth_ > 1000) throw py::value_error("metalcall.numpy: a fused expression nests too deeply");
    const NodeTypes& t = g_types;
    PyTypeObject* type = Py_TYPE(node);
    int s;
    if (type == t.op && read_slot(node, t.op_buf, "buf") != Py_None) {
      // An evaluated node reads its buffer, C-contiguous from element 0.
      const Ints shape = ints_of(read_slot(node, t.op_shape, "shape"));
      s = input(read_slot(node, t.op_buf, "buf"), 0, shape, contiguous_strides(shape), read_slot(node, t.op_dtype, "dtype"));
    } else if (type == t.leaf) {
      s = input(read_slot(node, t.leaf_buf, "buf"), as_int(read_slot(node, t.leaf_offset, "offset")),
                ints_of(read_slot(node, t.leaf_shape, "shape")), ints_of(read_slot(node, t.leaf_strides, "strides")),
                read_slot(node, t.leaf_dtype, "dtype"));
    } else if (type == t.scalar) {
      PyObject* dtype = read_slot(node, t.scalar_dtype, "dtype");
      s = entries_++;
      key_.push_back('S');
      put16(key_, dtype_code(dtype));
      if (describe_) described_->append(py::make_tuple("sc", scalars_.size(), py::handle(dtype)));
      scalars_.push_back(node);
    } else if (type == t.op) {
      s = operation(node);
    } else {
      throw py::type_error(std::string("metalcall.numpy: a fused expression holds a ") + type->tp_name);
    }
    --depth_;
    slots_.emplace_back(node, s);
    return s;
  }

  void output(const py::handle& item, const Ints& shape) {
    // (node, (buf, offset, strides, dtype, shape))
    if (!PyTuple_Check(item.ptr()) || PyTuple_GET_SIZE(item.ptr()) != 2) throw py::type_error("metalcall.numpy: a fused item is not (node, dest)");
    PyObject* dest = PyTuple_GET_ITEM(item.ptr(), 1);
    if (!PyTuple_Check(dest) || PyTuple_GET_SIZE(dest) != 5) throw py::type_error("metalcall.numpy: a fused destination is not a 5-tuple");
    Output o;
    o.slot = slot(PyTuple_GET_ITEM(item.ptr(), 0));
    o.buf = PyTuple_GET_ITEM(dest, 0);
    o.offset = as_int(PyTuple_GET_ITEM(dest, 1));
    o.strides = ints_of(PyTuple_GET_ITEM(dest, 2));
    o.dtype = PyTuple_GET_ITEM(dest, 3);
    o.kind = output_kind(shape, o.offset, o.strides);
    key_.push_back('U');
    put16(key_, static_cast<unsigned>(o.slot));
    put16(key_, dtype_code(o.dtype));
    o.key_at = key_.size();
    key_.push_back(o.kind);
    outputs_.push_back(std::move(o));
  }

  // Drops the dimensions of size 1 and merges neighbours that every operand walks as one
  // (stride[d] == stride[d + 1] * shape[d + 1]), as NumPy's iterator coalesces, then says each
  // operand's kind and the key anew. A kernel then divides out fewer coordinates per element,
  // and the CPU's rows are the longest the operands allow: `a[::2, None] + 1` (a column of 1e6)
  // ran rows of one element, 2.5x slower than `a[::2] + 1`. Shapes that coalesce alike share
  // one kernel (a contiguous (1000, 1000) and (10**6,)).
  void coalesce() {
    if (std::find(shape_.begin(), shape_.end(), 0) != shape_.end()) return;  // nothing is launched
    std::vector<Ints*> strides;
    for (Input& in : inputs_) strides.push_back(&in.bstrides);
    for (Output& o : outputs_) strides.push_back(&o.strides);
    Ints shape;
    std::vector<Ints> merged(strides.size());
    for (std::size_t d = 0; d < shape_.size(); ++d) {
      if (shape_[d] == 1) continue;
      bool joins = !shape.empty();
      for (std::size_t k = 0; joins && k < strides.size(); ++k) joins = merged[k].back() == (*strides[k])[d] * shape_[d];
      if (joins) {
        shape.back() *= shape_[d];
        for (std::size_t k = 0; k < strides.size(); ++k) merged[k].back() = (*strides[k])[d];
      } else {
        shape.push_back(shape_[d]);
        for (std::size_t k = 0; k < strides.size(); ++k) merged[k].push_back((*strides[k])[d]);
      }
    }
    if (shape.empty()) {  // one element
      shape.push_back(1);
      for (Ints& m : merged) m.push_back(0);
    }
    if (shape == shape_) return;
    shape_ = std::move(shape);
    for (std::size_t k = 0; k < strides.size(); ++k) *strides[k] = std::move(merged[k]);
    key_[0] = static_cast<char>(shape_.size());
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      Input& in = inputs_[i];
      in.kind = key_[in.key_at] = input_kind(shape_, in.offset, in.bstrides);
      if (describe_) PyList_SetItem(described_->ptr(), in.described_at, input_entry(i, in.dtype, in.kind).release().ptr());
    }
    for (Output& o : outputs_) o.kind = key_[o.key_at] = output_kind(shape_, o.offset, o.strides);
  }

  const Ints& shape() const { return shape_; }
  const std::string& key() const { return key_; }
  const std::vector<Input>& inputs() const { return inputs_; }
  const std::vector<PyObject*>& scalars() const { return scalars_; }
  const std::vector<Output>& outputs() const { return outputs_; }
  const py::list& described() const { return *described_; }  // with describe only

 private:
  int input(PyObject* buf, long long offset, const Ints& shape, const Ints& strides, PyObject* dtype) {
    if (strides.size() != shape.size()) throw py::value_error("metalcall.numpy: a fused input's strides do not match its shape");
    const bool same = shape == shape_ && std::find(shape.begin(), shape.end(), 1) == shape.end();
    Ints bs = same ? strides : broadcast_strides(shape, strides, shape_);
    const std::uint16_t code = dtype_code(dtype);
    for (const auto& [index, s] : input_slots_) {
      const Input& in = inputs_[index];
      if (in.buf == buf && in.offset == offset && in.bstrides == bs && dtype_code(in.dtype) == code) return s;
    }
    const char kind = input_kind(shape_, offset, bs);
    const int s = entries_++;
    key_.push_back('I');
    put16(key_, code);
    const std::size_t key_at = key_.size();
    key_.push_back(kind);
    Py_ssize_t described_at = -1;
    if (describe_) {
      described_at = PyList_GET_SIZE(described_->ptr());
      described_->append(input_entry(inputs_.size(), dtype, kind));
    }
    input_slots_.emplace_back(inputs_.size(), s);
    inputs_.push_back(Input{buf, dtype, offset, std::move(bs), kind, key_at, described_at});
    return s;
  }

  static py::tuple input_entry(std::size_t index, PyObject* dtype, char kind) {
    return py::make_tuple("in", index, py::handle(dtype), kind_name(kind));
  }

  int operation(PyObject* node) {
    const NodeTypes& t = g_types;
    PyObject* args = read_slot(node, t.op_args, "args");
    if (!PyTuple_Check(args)) throw py::type_error("metalcall.numpy: a fused node's args is not a tuple");
    std::vector<int> children;
    children.reserve(static_cast<std::size_t>(PyTuple_GET_SIZE(args)));
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); ++i) children.push_back(slot(PyTuple_GET_ITEM(args, i)));
    PyObject* op = read_slot(node, t.op_op, "op");
    PyObject* dtype = read_slot(node, t.op_dtype, "dtype");
    PyObject* ct = read_slot(node, t.op_ct, "ct");
    Py_ssize_t len = 0;
    const char* name = PyUnicode_Check(op) ? PyUnicode_AsUTF8AndSize(op, &len) : nullptr;
    if (!name) throw py::type_error("metalcall.numpy: a fused node's op is not a str");
    const int s = entries_++;
    key_.push_back('O');
    put16(key_, static_cast<unsigned>(len));
    key_.append(name, static_cast<std::size_t>(len));
    put16(key_, dtype_code(dtype));
    put16(key_, dtype_code(ct));
    put16(key_, static_cast<unsigned>(children.size()));
    for (int c : children) put16(key_, static_cast<unsigned>(c));
    if (describe_) {
      py::tuple kids(children.size());
      for (std::size_t i = 0; i < children.size(); ++i) kids[i] = py::int_(children[i]);
      described_->append(py::make_tuple("op", py::handle(op), py::handle(dtype), py::handle(ct), kids));
    }
    return s;
  }

  Ints shape_;
  bool describe_;
  std::string key_;
  int entries_ = 0;
  int depth_ = 0;
  std::vector<std::pair<PyObject*, int>> slots_;           // node -> entry (expressions have at most a few dozen)
  std::vector<std::pair<std::size_t, int>> input_slots_;   // input index -> entry
  std::vector<Input> inputs_;
  std::vector<PyObject*> scalars_;
  std::vector<Output> outputs_;
  std::optional<py::list> described_;  // made only when describing (a list per evaluation costs)
};

// Walks every item: (node, (buf, offset, strides, dtype, shape)), all of the first one's shape;
// returns the shape the kernel runs over (coalesced: Walk::coalesce).
Ints walk_items(PyObject* items, bool describe, std::optional<Walk>& walk) {
  if (!PyList_Check(items) || PyList_GET_SIZE(items) == 0) throw py::type_error("metalcall.numpy: fused items must be a non-empty list");
  PyObject* first = PyList_GET_ITEM(items, 0);
  if (!PyTuple_Check(first) || PyTuple_GET_SIZE(first) != 2 || !PyTuple_Check(PyTuple_GET_ITEM(first, 1)) ||
      PyTuple_GET_SIZE(PyTuple_GET_ITEM(first, 1)) != 5) {
    throw py::type_error("metalcall.numpy: a fused item is not (node, (buf, offset, strides, dtype, shape))");
  }
  const Ints shape = ints_of(PyTuple_GET_ITEM(PyTuple_GET_ITEM(first, 1), 4));
  walk.emplace(shape, describe);
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); ++i) walk->output(PyList_GET_ITEM(items, i), shape);
  walk->coalesce();
  return walk->shape();
}

void require_setup() {
  if (!g_types.op) throw py::type_error("metalcall.numpy's fusion nodes are not registered (_fusion_setup)");
}

// ---- plans: the compiled kernel of each structure seen ----

struct Plan {
  py::object device;   // kept: its address is part of the key
  py::object kernel;
  std::vector<std::pair<bool, int>> strided;  // (is input, index): whose strides follow the shape in P
  bool vec = false;    // four elements a thread
  bool rows = false;   // a 2-D grid: (the last dimension, the rest) (_fusion._rows_grid)
};

constexpr std::size_t kMaxPlans = 4096;   // as _fusion's source cache
constexpr std::size_t kMaxParams = 1024;  // as _fusion._params'

std::unordered_map<std::string, Plan>& plans() {
  static auto& p = *new std::unordered_map<std::string, Plan>;  // never destroyed: holds Python objects
  return p;
}

struct Params {
  py::object device;  // kept: its address is part of the key
  py::object buffer;
};

std::unordered_map<std::string, Params>& params_cache() {
  static auto& p = *new std::unordered_map<std::string, Params>;  // never destroyed: holds Python objects
  return p;
}

std::string plan_key(PyObject* device, bool fours, const std::string& walk_key) {
  std::string key(reinterpret_cast<const char*>(&device), sizeof device);
  key.push_back(fours ? 'F' : 'f');
  key += walk_key;
  return key;
}

// The small int64 argument of offsets, shape and strides (_fusion._params makes it; equal ones shared).
// A new reference: the cache may be cleared while the caller runs Python code (another thread's).
py::object params_buffer(PyObject* device, const Ints& values) {
  std::string key(reinterpret_cast<const char*>(&device), sizeof device);
  key.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(long long));
  auto& cache = params_cache();
  const auto hit = cache.find(key);
  if (hit != cache.end()) return hit->second.buffer;
  py::tuple t(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) t[i] = py::int_(values[i]);
  py::object buf = py::reinterpret_steal<py::object>(PyObject_CallFunctionObjArgs(g_types.params, device, t.ptr(), nullptr));
  if (!buf) throw py::error_already_set();
  if (cache.size() >= kMaxParams) cache.clear();
  cache.emplace(std::move(key), Params{py::reinterpret_borrow<py::object>(device), buf});
  return buf;
}

// _fusion_launch(device, items, fours) -> Completion, or None when the structure has no plan yet.
PyObject* fusion_launch(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  try {
    if (nargs != 3) throw py::type_error("_fusion_launch(device, items, fours)");
    require_setup();
    PyObject* device = args[0];
    const int fours = PyObject_IsTrue(args[2]);
    if (fours < 0) throw py::error_already_set();
    std::optional<Walk> walk;
    const Ints shape = walk_items(args[1], false, walk);
    const auto found = plans().find(plan_key(device, fours == 1, walk->key()));
    if (found == plans().end()) Py_RETURN_NONE;
    // A copy: the scalars' and parameters' Python code below may let another thread change the map.
    const Plan plan = found->second;

    long long n = 1;
    for (long long s : shape) n *= s;
    std::vector<py::object> owned;  // new references the call borrows
    std::vector<PyObject*> argv;
    argv.reserve(walk->inputs().size() + walk->scalars().size() + walk->outputs().size() + 2);
    if (plan.rows) {  // shape has at least two dimensions and n > 0 (run() returns before)
      const long long last = shape.back();
      owned.emplace_back(py::make_tuple(last, n / last));
    } else {
      owned.emplace_back(py::int_(plan.vec ? n / 4 : n));
    }
    argv.push_back(owned.back().ptr());
    for (const Input& in : walk->inputs()) argv.push_back(in.buf);
    for (PyObject* s : walk->scalars()) {
      PyObject* b = PyObject_CallFunctionObjArgs(g_types.scalar_bytes, read_slot(s, g_types.scalar_value, "value"),
                                                 read_slot(s, g_types.scalar_dtype, "dtype"), nullptr);
      if (!b) throw py::error_already_set();
      owned.emplace_back(py::reinterpret_steal<py::object>(b));
      argv.push_back(b);
    }
    // P: input offsets, output offsets, shape, the strides of each strided input and output, 0.
    Ints values;
    for (const Input& in : walk->inputs()) values.push_back(in.offset);
    for (const Output& o : walk->outputs()) values.push_back(o.offset);
    values.insert(values.end(), shape.begin(), shape.end());
    for (const auto& [is_input, k] : plan.strided) {
      const Ints& st = is_input ? walk->inputs()[static_cast<std::size_t>(k)].bstrides : walk->outputs()[static_cast<std::size_t>(k)].strides;
      values.insert(values.end(), st.begin(), st.end());
    }
    values.push_back(0);
    owned.push_back(params_buffer(device, values));
    argv.push_back(owned.back().ptr());
    for (const Output& o : walk->outputs()) argv.push_back(o.buf);
    return PyObject_Vectorcall(plan.kernel.ptr(), argv.data(), argv.size(), nullptr);
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (...) {
    py::detail::try_translate_exceptions();
  }
  return nullptr;
}

}  // namespace

void init_fusion(py::module_& m) {
  m.def("_fusion_setup", [](py::handle op, py::handle leaf, py::handle scalar, py::handle scalar_bytes, py::handle params) {
    NodeTypes t;
    static_cast<NodeSlots&>(t) = node_slots(op, leaf, scalar);
    t.scalar_bytes = scalar_bytes.inc_ref().ptr();
    t.params = params.inc_ref().ptr();
    g_types = t;  // kept for the process (a reload registers new classes; the old stay referenced)
    plans().clear();
    params_cache().clear();
  });
  m.def("_fusion_walk", [](py::handle items) {
    require_setup();
    std::optional<Walk> walk;
    walk_items(items.ptr(), true, walk);
    py::list outs, inputs, scalars;
    for (const Output& o : walk->outputs()) outs.append(py::make_tuple(o.slot, py::handle(o.dtype), kind_name(o.kind)));
    for (const Input& in : walk->inputs()) {
      py::tuple bs(in.bstrides.size());
      for (std::size_t i = 0; i < in.bstrides.size(); ++i) bs[i] = py::int_(in.bstrides[i]);
      inputs.append(py::make_tuple(py::handle(in.buf), in.offset, bs, kind_name(in.kind)));
    }
    for (PyObject* s : walk->scalars()) scalars.append(py::handle(s));
    return py::make_tuple(py::tuple(walk->described()), py::tuple(outs), inputs, scalars, py::bytes(walk->key()),
                          walk->shape().size());
  }, "metalcall.numpy's fusion walk: (entries, outs, inputs, scalars, key, nd) of a list of (node, dest) items; nd: "
     "the dimensions of the coalesced shape the kernel runs over.");
  m.def("_fusion_remember", [](py::handle device, py::bytes key, bool fours, py::handle kernel, py::handle strided, bool vec,
                               bool rows) {
    Plan plan;
    plan.device = py::reinterpret_borrow<py::object>(device);
    plan.kernel = py::reinterpret_borrow<py::object>(kernel);
    for (const py::handle& e : strided) {
      auto pair = e.cast<py::tuple>();
      plan.strided.emplace_back(pair[0].cast<std::string>() == "in", pair[1].cast<int>());
    }
    plan.vec = vec;
    plan.rows = rows;
    if (plans().size() >= kMaxPlans) plans().clear();
    plans()[plan_key(device.ptr(), fours, std::string(key))] = std::move(plan);
  }, "Registers the compiled kernel of a fused structure (its walk's key) on a device.");
  static PyMethodDef launch_def{"_fusion_launch", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(fusion_launch)),
                                METH_FASTCALL,
                                "_fusion_launch(device, items, fours): the kernel of a structure seen before, "
                                "launched (its Completion); None for a new structure."};
  m.add_object("_fusion_launch", py::reinterpret_steal<py::object>(PyCFunction_New(&launch_def, nullptr)));
}

}  // namespace metalcall::python
