// metalcall.Kernel: the call path (a hand-written tp_call) and reflection.
#include <algorithm>

#include "bindings.hpp"
#include "misaligned_host.hpp"

namespace metalcall::python {

namespace {

std::string type_name(const py::handle& v) { return Py_TYPE(v.ptr())->tp_name; }

// A Python int from an object with __index__; an error from __index__ itself (TypeError,
// ValueError, OverflowError) becomes an ArgumentError naming `what`.
py::object as_index(const py::handle& v, const std::string& what) {
  py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr()));
  if (!index) {
    if (!PyErr_ExceptionMatches(PyExc_TypeError) && !PyErr_ExceptionMatches(PyExc_ValueError) &&
        !PyErr_ExceptionMatches(PyExc_OverflowError)) {
      throw py::error_already_set();
    }
    PyErr_Clear();
    throw ArgumentError(what + " must be an int, got " + type_name(v));
  }
  return index;
}

// The grid or threadgroup: an int or a tuple/list of 1 to 3 ints, each 0..2^32-1 here
// (core checks what each allows). Errors name it "kernel 'k': <what>" (built only then:
// a call must stay cheap).
void parse_triple(const py::handle& h, std::uint64_t out[3], const Kernel& kernel, const char* what_name) {
  out[0] = out[1] = out[2] = 1;
  if (PyLong_CheckExact(h.ptr())) {  // the common grid: a plain int
    int overflow = 0;
    const long long n = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
    if (overflow == 0 && n >= 0 && n <= 0xffffffffll) {
      out[0] = static_cast<std::uint64_t>(n);
      return;
    }
  }
  const std::string what = "kernel '" + kernel.name() + "': " + what_name;
  const std::string expected = " must be an int or a tuple of 1 to 3 ints";
  auto component = [&](const py::handle& v, const std::string& name) -> std::uint64_t {
    if (PyBool_Check(v.ptr()) || !PyIndex_Check(v.ptr())) {
      throw ArgumentError(what + expected + ", got " + type_name(v) + (name.empty() ? "" : " in " + name));
    }
    py::object index = as_index(v, what);
    int overflow = 0;
    const long long n = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    const std::string shown = std::string(py::str(index));
    if (overflow < 0 || (overflow == 0 && n < 0)) throw ArgumentError(what + (name.empty() ? "" : " " + name) + " cannot be negative: " + shown);
    if (overflow > 0 || static_cast<unsigned long long>(n) > 0xffffffffull) {
      throw ArgumentError(what + (name.empty() ? "" : " " + name) + " is " + (shown.size() > 24 ? "over 2^64" : shown) +
                          "; each dimension is limited to 2^32-1 threads");
    }
    return static_cast<std::uint64_t>(n);
  };
  if (PyTuple_Check(h.ptr()) || PyList_Check(h.ptr())) {
    py::sequence seq = py::reinterpret_borrow<py::sequence>(h);
    const auto n = seq.size();
    if (n < 1 || n > 3) throw ArgumentError(what + " must have 1 to 3 dimensions, got " + std::to_string(n));
    for (std::size_t d = 0; d < n; ++d) out[d] = component(seq[d], "dimension " + std::to_string(d));
  } else {
    out[0] = component(h, "");
  }
}

// One keyword argument of a call. Checked by comparing the name first and making strings only
// for errors: metalcall.numpy's launches pass threadgroup= on every call, which built the
// messages' prefix and the name as std::strings each time.
void parse_option(const Kernel& kernel, PyObject* key, const py::handle& value, LaunchShape& shape) {
  auto prefix = [&kernel] { return "kernel '" + kernel.name() + "': "; };
  if (PyUnicode_Check(key) && PyUnicode_CompareWithASCIIString(key, "threadgroup") == 0) {
    if (value.is_none()) return;
    std::uint64_t tg[3];
    parse_triple(value, tg, kernel, "threadgroup");
    for (int d = 0; d < 3; ++d) {
      if (tg[d] == 0) throw ArgumentError(prefix() + "threadgroup sizes must be between 1 and 2^32-1, got 0 in dimension " + std::to_string(d));
      shape.threadgroup[d] = static_cast<std::uint32_t>(tg[d]);
    }
    return;
  }
  const std::string name = py::str(key);
  if (name == "threadgroup_memory") {
    if (value.is_none()) return;
    const std::string what = prefix() + "threadgroup_memory";
    const std::string usage = " takes byte lengths (ints): an int for [[threadgroup(0)]] or a list, one per index";
    auto add = [&](const py::handle& v) {
      const std::string at = what + "[" + std::to_string(shape.threadgroup_memory.size()) + "]";
      if (PyBool_Check(v.ptr()) || !PyIndex_Check(v.ptr())) throw ArgumentError(what + usage + "; got " + type_name(v) + " at " + at);
      py::object index = as_index(v, at);
      int overflow = 0;
      const long long n = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
      if (overflow < 0 || (overflow == 0 && n < 0)) throw ArgumentError(at + " cannot be negative: " + std::string(py::str(index)));
      if (overflow > 0 || static_cast<unsigned long long>(n) > (1ull << 40)) {
        throw ArgumentError(at + " is " + std::string(py::str(index)) + " bytes, far over any device's threadgroup memory");
      }
      shape.threadgroup_memory.push_back(static_cast<std::size_t>(n));
    };
    if (PyIndex_Check(value.ptr()) && !PyBool_Check(value.ptr())) {
      add(value);
    } else if (PyTuple_Check(value.ptr()) || PyList_Check(value.ptr())) {
      for (const auto& v : py::reinterpret_borrow<py::sequence>(value)) add(v);
    } else if (!parse_texture_option(name, value, shape)) {
      throw ArgumentError(what + usage + "; got " + type_name(value));
    }
  } else if (!parse_texture_option(name, value, shape)) {
    throw ArgumentError("unknown keyword argument '" + name + "'; a kernel call takes grid, the kernel's arguments, "
                        "threadgroup=, threadgroup_memory=, textures= and samplers=");
  }
}

// A call's keyword arguments where CPython has them: vectorcall's names and values, or tp_call's dict.
struct Keywords {
  PyObject* names = nullptr;  // a tuple of str (vectorcall)
  PyObject* const* values = nullptr;
  PyObject* dict = nullptr;   // tp_call
};

void parse_options(const Kernel& kernel, const Keywords& keywords, LaunchShape& shape) {
  if (keywords.names) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(keywords.names); ++i)
      parse_option(kernel, PyTuple_GET_ITEM(keywords.names, i), keywords.values[i], shape);
  } else if (keywords.dict) {
    Py_ssize_t at = 0;
    PyObject *key, *value;
    while (PyDict_Next(keywords.dict, &at, &key, &value)) parse_option(kernel, key, value, shape);
  }
}

// Python objects a batch keeps alive for one recorded call. The batch may drop
// them on any thread, so the GIL is taken first.
struct BatchReferences {
  std::unique_ptr<HostReferences> refs = std::make_unique<HostReferences>();
  ~BatchReferences() {
    PyGILState_STATE gil;
    if (!ensure_gil_unless_exiting(&gil)) {
      (void)refs.release();  // the process is ending: the references leak
      return;
    }
    refs.reset();
    PyGILState_Release(gil);
  }
};

}  // namespace

std::shared_ptr<void> keep_host_arguments(PositionalArgs args, std::size_t first, HostReferences& refs) {
  std::shared_ptr<BatchReferences> kept;
  const auto& numpy = py::detail::npy_api::get();
  for (std::size_t i = first; i < args.size; ++i) {
    PyObject* o = args.items[i];
    const bool host = numpy.PyArray_Check_(o) || (PyObject_CheckBuffer(o) && !py::isinstance<PyBuffer>(py::handle(o)));
    if (!host) continue;
    if (!kept) kept = std::make_shared<BatchReferences>();
    kept->refs->keep(o);
  }
  // DLPack imports are not host objects above, but their views sit in refs.
  if (!kept && !refs.empty()) kept = std::make_shared<BatchReferences>();
  if (kept) kept->refs->take(refs);
  return kept;
}

namespace {

// A call recorded into a batch borrows its host memory until the commit, and the
// batch may hold the only reference to it: hand the batch the arrays and views.
// Buffers need nothing: the recorded call holds their storage.
void keep_for_batch(const Kernel& kernel, PositionalArgs args, HostReferences& refs) {
  if (std::shared_ptr<void> kept = keep_host_arguments(args, 1, refs)) {
    if (Batch batch = kernel.device().current_batch()) batch.keep_alive(std::move(kept));
  }
}

// A call's Arguments live in a vector kept per thread, so that a call allocates
// none. A call made while another converts its arguments (an __index__ that calls
// a kernel) takes a vector of its own. Cleared at the end of each call: the
// Arguments hold Buffers, which must not outlive the call here.
struct ScratchArguments {
  std::vector<Argument> list;
  bool in_use = false;
};
thread_local ScratchArguments t_scratch;

class CallArguments {
 public:
  // t_scratch named once: each mention of a thread_local is a call to __tls_get_addr here.
  CallArguments() : scratch_(claim(t_scratch)) {}
  ~CallArguments() {
    if (!scratch_) return;
    scratch_->list.clear();
    scratch_->in_use = false;
  }
  CallArguments(const CallArguments&) = delete;
  CallArguments& operator=(const CallArguments&) = delete;
  std::vector<Argument>& list() { return scratch_ ? scratch_->list : own_; }

 private:
  static ScratchArguments* claim(ScratchArguments& scratch) {
    if (scratch.in_use) return nullptr;
    scratch.in_use = true;
    return &scratch;
  }
  ScratchArguments* scratch_;
  std::vector<Argument> own_;
};

PyTypeObject* g_kernel_type = nullptr;

// `keywords` may hold none.
py::object call_kernel(const Kernel& kernel, PositionalArgs args, const Keywords& keywords) {
  if (args.size == 0) {
    throw ArgumentError("kernel '" + kernel.name() + "' needs the grid first: kernel(grid, *arguments)");
  }
  LaunchShape shape;
  parse_triple(py::handle(args.items[0]), shape.grid, kernel, "grid");
  parse_options(kernel, keywords, shape);
  CallArguments scratch;
  std::vector<Argument>& arguments = scratch.list();
  HostReferences refs;
  convert_arguments(args, 1, nullptr, arguments, refs, &kernel, /*hold_producers=*/true);
  MisalignedHostCopies copies;
  copies.stage(kernel, arguments);

  // Each dimension is under 2^32 here: the product saturates instead of wrapping.
  const std::uint64_t plane = shape.grid[1] * shape.grid[2];
  const std::uint64_t threads = plane && shape.grid[0] > (~0ull / plane) ? ~0ull : shape.grid[0] * plane;
  Completion completion;
  WaitScope interruptible;  // Ctrl-C while the call waits (host memory, checked mode)
  if (threads > (1u << 15) || !kernel.info().loop_free) {
    // Long, blocking, or with loops (a small grid may still run forever, until stopped): let
    // other Python threads run meanwhile. A loop-free kernel on a small grid ends quickly.
    GilRelease release;
    completion = kernel(shape, arguments);
  } else {
    completion = kernel(shape, arguments);
  }
  if (!completion.submitted()) keep_for_batch(kernel, args, refs);  // the producers too
  copies.copy_back();  // a call with host memory has waited for it
  return wrap_completion(std::move(completion), refs.take_producers());
}

const Kernel& kernel_of(PyObject* self) {
  const Kernel* kernel = exact_instance<Kernel>(self, g_kernel_type);
  return kernel ? *kernel : py::handle(self).cast<const Kernel&>();  // a subclass
}

// Kernel.__call__ as the type's tp_call: a kernel call is the hot path, and
// pybind11's general dispatcher (overloads, argument casters, type lookups)
// costs more than the call itself on small grids.
PyObject* kernel_tp_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  try {
    Keywords keywords;
    keywords.dict = kwargs;
    return call_kernel(kernel_of(self), PositionalArgs::of(py::reinterpret_borrow<py::args>(args)), keywords).release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (ForcedUnwind&) {
    throw;  // a thread CPython ends (pthread_exit) must unwind, or the process aborts
  } catch (...) {
    py::detail::try_translate_exceptions();
  }
  return nullptr;
}

// The same call by vectorcall (PEP 590): CPython passes the arguments where they are, with no
// tuple to build, track for the garbage collector and free on every call; nor a dict for the
// keywords (metalcall.numpy's launches pass threadgroup=).
PyObject* kernel_vectorcall(PyObject* self, PyObject* const* args, std::size_t nargsf, PyObject* kwnames) {
  try {
    const std::size_t n = PyVectorcall_NARGS(nargsf);
    Keywords keywords;
    keywords.names = kwnames;
    keywords.values = args + n;
    return call_kernel(kernel_of(self), PositionalArgs{args, n}, keywords).release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (ForcedUnwind&) {
    throw;
  } catch (...) {
    py::detail::try_translate_exceptions();
  }
  return nullptr;
}

// Each Kernel object holds a pointer to kernel_vectorcall after pybind11's own layout, at the
// offset its type names (tp_vectorcall_offset). Kernel objects are allocated here; a Python
// subclass's are not (CPython allocates them), so theirs stays null and CPython takes tp_call.
Py_ssize_t g_vectorcall_offset = 0;

PyObject* kernel_alloc(PyTypeObject* type, Py_ssize_t items) {
  PyObject* self = PyType_GenericAlloc(type, items);
  if (self) *reinterpret_cast<vectorcallfunc*>(reinterpret_cast<char*>(self) + g_vectorcall_offset) = kernel_vectorcall;
  return self;
}

void enable_fast_calls(PyHeapTypeObject* heap) {
  PyTypeObject& type = heap->ht_type;
  type.tp_call = kernel_tp_call;
  g_vectorcall_offset = type.tp_basicsize;  // pybind11's instance (and its dict pointer): pointer-aligned
  type.tp_basicsize += static_cast<Py_ssize_t>(sizeof(vectorcallfunc));
  type.tp_vectorcall_offset = g_vectorcall_offset;
  type.tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL;
  type.tp_alloc = kernel_alloc;
}

py::dict param_dict(const ParamInfo& p) {
  py::dict d;
  d["name"] = p.name;
  d["position"] = p.position;
  d["binding"] = p.binding >= 0 ? py::object(py::int_(p.binding)) : py::object(py::none());
  d["kind"] = to_string(p.kind);
  d["address_space"] = to_string(p.address_space);
  d["type"] = p.type_name;
  d["scalar"] = to_string(p.scalar);
  d["vector_width"] = p.vector_width;
  d["const"] = p.is_const;
  d["builtin"] = p.builtin == Builtin::none ? py::object(py::none()) : py::object(py::str(to_string(p.builtin)));
  d["element_size"] = p.element_size;
  d["element_align"] = p.element_align;
  d["grid_indexed"] = p.grid_indexed;  // an unchecked call needs grid.x elements in it
  d["function_constant"] = p.function_constant.empty() ? py::object(py::none()) : py::object(py::str(p.function_constant));
  d["enabled"] = p.enabled;  // false: a false function constant leaves it out; the call passes None
  return d;
}

std::string signature(const KernelInfo& k) {
  std::string s = k.name + "(";
  bool first = true;
  for (const ParamInfo* p : k.buffer_params()) {
    s += (first ? "" : ", ") + p->name + ": " + p->type_name + (p->kind == ParamKind::buffer ? "*" : "");
    first = false;
  }
  return s + ")";
}

}  // namespace

void init_kernel(py::module_& m) {
  // dynamic_attr: metalcall/_pickling.py keeps how the kernel was made on it, to pickle it.
  auto cls = py::class_<Kernel>(m, "Kernel", py::dynamic_attr(), R"doc(
A compiled kernel. ``kernel(grid, *arguments, threadgroup=None, threadgroup_memory=None)``
runs it over ``grid`` threads (an int or a 1-3 tuple, in threads); arguments bind
by order to its [[buffer(i)]] parameters (None for one that a false function
constant switches off, which may also be left off the end); ``threadgroup`` is the threadgroup size
(int or tuple; automatic by default), ``threadgroup_memory`` the byte lengths of
its [[threadgroup(i)]] parameters. Returns a Completion.
)doc", py::custom_type_setup(enable_fast_calls))
      .def_property_readonly("name", [](const Kernel& k) { return k.name(); })
      .def_property_readonly("params", [](const Kernel& k) {
        py::list out;
        for (const auto& p : k.info().params) out.append(param_dict(p));
        return out;
      }, "The reflection table: one dict per parameter, in declaration order.")
      .def_property_readonly("max_total_threads_per_threadgroup",
                             [](const Kernel& k) { return k.info().max_total_threads_per_threadgroup; },
                             "The most threads a threadgroup of this kernel may have on its device: on Metal its "
                             "pipeline's own maxTotalThreadsPerThreadgroup (it depends on the kernel's registers "
                             "and threadgroup memory: 256 on some AMD and Intel pipelines), which may be less "
                             "than Device.max_threads_per_threadgroup. Size fixed threadgroups from it.")
      .def_property_readonly("thread_schedule", [](const Kernel& k) -> py::object {
        if (k.info().thread_schedule.empty()) return py::none();
        return py::str(k.info().thread_schedule);
      })
      .def_property_readonly("threads_synchronise", [](const Kernel& k) -> py::object {
        if (!k.info().threads_synchronise) return py::none();
        return py::bool_(*k.info().threads_synchronise);
      }, "True when the kernel may reach a barrier, a SIMD- or quad-group function or a SIMD-group matrix "
         "(the CPU backend then runs its threads as fibers, CUDA launches whole threadgroups); False when "
         "none can be reached (a plain loop); None where the backend does not say (Metal).")
      .def_property_readonly("thread_execution_width", [](const Kernel& k) {
        const unsigned width = k.info().thread_execution_width;
        return width ? width : k.device().info().simd_width;
      }, "The SIMD-group width this kernel's pipeline runs with: on Metal each pipeline has its own "
         "(threadExecutionWidth, 8 to 64 on Intel and AMD GPUs), which may differ from Device.simd_width.")
      .def("__repr__", [](const Kernel& k) { return "<metalcall.Kernel " + signature(k.info()) + ">"; });
  g_kernel_type = reinterpret_cast<PyTypeObject*>(cls.ptr());
}

}  // namespace metalcall::python
