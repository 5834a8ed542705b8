// metalcall.numpy's elementwise operations on their common path (numpy/_elementwise.py apply):
// operands that are arrays of one device and Python scalars, of types resolved before, of one
// shape, in an expression still within MAX_INPUTS nodes. The Op node, its Leaf and Scalar operands
// and the lazy ndarray are made here, their __slots__ written in place: in Python that took ~1.9 µs
// an operation on the 2-core box (object creation, one call per class), which bounds how fast a
// fused chain of 1e7 elements can be issued to a GPU. Anything else returns None, and apply()
// goes its Python way (broadcasting, type resolution, bounding a large expression). Runs under
// the GIL; it makes the same objects, with the same slot values, as the Python path.
#include <string>

#include "bindings.hpp"
#include "slots.hpp"

namespace metalcall::python {

namespace {

struct LazyTypes : NodeSlots {
  PyTypeObject* array = nullptr;  // ndarray, and its slots:
  Py_ssize_t a_buf = 0, a_offset = 0, a_shape = 0, a_strides = 0, a_dtype = 0, a_device = 0, a_node = 0, a_readonly = 0;
  PyObject* apply_types = nullptr;  // _elementwise._APPLY_TYPES: (op, types, id(device)) -> (rdt, ct, device)
  PyObject* live = nullptr;         // _fusion._LIVE_LAZY
  PyObject* live_refs = nullptr;    // its dict: id(array) -> weakref
  PyObject* config = nullptr;       // _fusion._config ("lazy": bool)
  PyObject* lazy_key = nullptr;     // "lazy"
  long max_inputs = 0;
};
LazyTypes g_lazy;

// A Python scalar apply() takes as a weak operand: exactly float, bool, complex or int.
bool weak_scalar(PyObject* o) {
  return PyFloat_CheckExact(o) || PyBool_Check(o) || PyComplex_CheckExact(o) || PyLong_CheckExact(o);
}

// A new object of a __slots__ class (its slots unset, for init_slot).
PyObject* new_instance(PyTypeObject* type) {
  PyObject* o = type->tp_alloc(type, 0);
  if (!o) throw py::error_already_set();
  return o;
}

PyObject* new_ref(PyObject* o) {
  Py_INCREF(o);
  return o;
}

// _fusion.contiguous_strides(shape) for a tuple of ints.
PyObject* contiguous_strides(PyObject* shape) {
  const Py_ssize_t n = PyTuple_GET_SIZE(shape);
  py::object out = py::reinterpret_steal<py::object>(PyTuple_New(n));
  if (!out) throw py::error_already_set();
  long long acc = 1;
  for (Py_ssize_t i = n; i-- > 0;) {
    PyObject* s = PyLong_FromLongLong(acc);
    if (!s) throw py::error_already_set();
    PyTuple_SET_ITEM(out.ptr(), i, s);
    const long long d = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
    if (d == -1 && PyErr_Occurred()) throw py::error_already_set();
    acc *= d > 1 ? d : 1;
  }
  return out.release().ptr();
}

// The fast path's Op, or None (nothing made) when apply() must go its Python way.
py::object lazy_apply(py::handle op_name, py::tuple xs) {
  const LazyTypes& t = g_lazy;
  if (!t.op) throw py::type_error("metalcall.numpy's lazy nodes are not registered (_lazy_setup)");
  const Py_ssize_t n = PyTuple_GET_SIZE(xs.ptr());
  // Operands: arrays of one device (by identity) and weak scalars; their type key; the shape.
  PyObject* device = nullptr;
  PyObject* shape = nullptr;
  long size = 1;
  py::object types = py::reinterpret_steal<py::object>(PyTuple_New(n));
  if (!types) throw py::error_already_set();
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* x = PyTuple_GET_ITEM(xs.ptr(), i);
    if (Py_TYPE(x) == t.array) {
      PyObject* d = slot_value(x, t.a_device);
      if (!d || (device && d != device)) return py::none();
      device = d;
      PyObject* node = slot_value(x, t.a_node);
      if (!node) return py::none();
      if (node != Py_None) {
        PyObject* buf = slot_value(node, t.op_buf);
        if (!buf || buf != Py_None) return py::none();  // evaluated: apply() makes it a Leaf of its buffer
        PyObject* s = slot_value(node, t.op_size);
        if (!s) return py::none();
        size += PyLong_AsLong(s);
        if (PyErr_Occurred()) throw py::error_already_set();
      } else {
        size += 1;
      }
      PyObject* s = slot_value(x, t.a_shape);
      if (!s || !PyTuple_CheckExact(s)) return py::none();
      if (PyTuple_GET_SIZE(s)) {
        if (!shape) {
          shape = s;
        } else if (s != shape) {
          const int equal = PyObject_RichCompareBool(s, shape, Py_EQ);
          if (equal < 0) throw py::error_already_set();
          if (!equal) return py::none();  // broadcasting: apply() works the shape out
        }
      }
      PyObject* dtype = slot_value(x, t.a_dtype);
      // Every slot is set by ndarray's constructors; an unset one is left to Python's error.
      if (!dtype || !slot_value(x, t.a_buf) || !slot_value(x, t.a_offset) || !slot_value(x, t.a_strides))
        return py::none();
      PyTuple_SET_ITEM(types.ptr(), i, new_ref(dtype));
    } else if (weak_scalar(x)) {
      size += 1;
      PyTuple_SET_ITEM(types.ptr(), i, new_ref(reinterpret_cast<PyObject*>(Py_TYPE(x))));
    } else {
      return py::none();
    }
  }
  // Past MAX_INPUTS nodes apply() checks the expression's bounds (and may evaluate an operand).
  if (!device || size > t.max_inputs) return py::none();
  py::object device_id = py::reinterpret_steal<py::object>(PyLong_FromVoidPtr(device));
  if (!device_id) throw py::error_already_set();
  py::tuple key = py::make_tuple(op_name, types, device_id);
  PyObject* hit = PyDict_GetItemWithError(t.apply_types, key.ptr());  // borrowed
  if (!hit) {
    if (PyErr_Occurred()) throw py::error_already_set();
    return py::none();  // types not resolved yet
  }
  PyObject* rdt = PyTuple_GET_ITEM(hit, 0);
  PyObject* ct = PyTuple_GET_ITEM(hit, 1);
  py::object shape_obj = shape ? py::reinterpret_borrow<py::object>(shape) : py::reinterpret_steal<py::object>(PyTuple_New(0));

  // The operands' nodes: a lazy array's Op, an evaluated array's Leaf, a scalar's Scalar.
  py::object args = py::reinterpret_steal<py::object>(PyTuple_New(n));
  if (!args) throw py::error_already_set();
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* x = PyTuple_GET_ITEM(xs.ptr(), i);
    PyObject* node;
    if (Py_TYPE(x) == t.array) {
      PyObject* lazy = slot_value(x, t.a_node);
      if (lazy != Py_None) {
        node = new_ref(lazy);
      } else {
        node = new_instance(t.leaf);
        init_slot(node, t.leaf_buf, new_ref(slot_value(x, t.a_buf)));
        init_slot(node, t.leaf_offset, new_ref(slot_value(x, t.a_offset)));
        init_slot(node, t.leaf_shape, new_ref(slot_value(x, t.a_shape)));
        init_slot(node, t.leaf_strides, new_ref(slot_value(x, t.a_strides)));
        init_slot(node, t.leaf_dtype, new_ref(slot_value(x, t.a_dtype)));
        init_slot(node, t.leaf_ids, new_ref(Py_None));
      }
    } else {
      node = new_instance(t.scalar);
      init_slot(node, t.scalar_value, new_ref(x));
      init_slot(node, t.scalar_dtype, new_ref(ct));
    }
    PyTuple_SET_ITEM(args.ptr(), i, node);
  }
  py::object size_obj = py::reinterpret_steal<py::object>(PyLong_FromLong(size));
  if (!size_obj) throw py::error_already_set();
  py::object node = py::reinterpret_steal<py::object>(new_instance(t.op));
  init_slot(node.ptr(), t.op_op, new_ref(op_name.ptr()));
  init_slot(node.ptr(), t.op_args, args.release().ptr());
  init_slot(node.ptr(), t.op_dtype, new_ref(rdt));
  init_slot(node.ptr(), t.op_ct, new_ref(ct));
  init_slot(node.ptr(), t.op_shape, new_ref(shape_obj.ptr()));
  init_slot(node.ptr(), t.op_buf, new_ref(Py_None));
  init_slot(node.ptr(), t.op_size, size_obj.release().ptr());
  init_slot(node.ptr(), t.op_ids, new_ref(Py_None));

  // _array.lazy_array(node, device)
  py::object strides = py::reinterpret_steal<py::object>(contiguous_strides(shape_obj.ptr()));
  py::object out = py::reinterpret_steal<py::object>(new_instance(t.array));
  static PyObject* zero = PyLong_FromLong(0);
  init_slot(out.ptr(), t.a_buf, new_ref(Py_None));
  init_slot(out.ptr(), t.a_offset, new_ref(zero));
  init_slot(out.ptr(), t.a_shape, new_ref(shape_obj.ptr()));
  init_slot(out.ptr(), t.a_strides, strides.release().ptr());
  init_slot(out.ptr(), t.a_dtype, new_ref(rdt));
  init_slot(out.ptr(), t.a_device, new_ref(device));
  init_slot(out.ptr(), t.a_node, node.release().ptr());
  init_slot(out.ptr(), t.a_readonly, new_ref(Py_False));
  // _LIVE_LAZY.add(out): a weak reference by id; the table prunes itself past its limit.
  py::object id = py::reinterpret_steal<py::object>(PyLong_FromVoidPtr(out.ptr()));
  py::object ref = py::reinterpret_steal<py::object>(PyWeakref_NewRef(out.ptr(), nullptr));
  if (!id || !ref || PyDict_SetItem(t.live_refs, id.ptr(), ref.ptr()) < 0) throw py::error_already_set();
  if (PyDict_GET_SIZE(t.live_refs) > 256) py::handle(t.live).attr("_grown")();
  PyObject* lazy = PyDict_GetItemWithError(t.config, t.lazy_key);  // borrowed
  if (!lazy && PyErr_Occurred()) throw py::error_already_set();
  if (lazy && !PyObject_IsTrue(lazy)) return out.attr("_materialize")();
  return out;
}

}  // namespace

void init_lazy_nodes(py::module_& m) {
  m.def("_lazy_setup", [](py::handle array, py::handle op, py::handle leaf, py::handle scalar, py::dict apply_types,
                          py::handle live, py::dict config, long max_inputs) {
    if (!PyType_Check(array.ptr())) throw py::type_error("_lazy_setup takes the array class");
    LazyTypes t;
    static_cast<NodeSlots&>(t) = node_slots(op, leaf, scalar);
    t.array = reinterpret_cast<PyTypeObject*>(array.inc_ref().ptr());
    t.a_buf = slot_offset(t.array, "_buf");
    t.a_offset = slot_offset(t.array, "_offset");
    t.a_shape = slot_offset(t.array, "_shape");
    t.a_strides = slot_offset(t.array, "_strides");
    t.a_dtype = slot_offset(t.array, "_dtype");
    t.a_device = slot_offset(t.array, "_device");
    t.a_node = slot_offset(t.array, "_node");
    t.a_readonly = slot_offset(t.array, "_readonly");
    py::object refs = live.attr("_refs");
    if (!PyDict_CheckExact(refs.ptr())) throw py::type_error("_lazy_setup: the live-array table keeps a dict");
    t.apply_types = apply_types.inc_ref().ptr();
    t.live = live.inc_ref().ptr();
    t.live_refs = refs.inc_ref().ptr();
    t.config = config.inc_ref().ptr();
    t.lazy_key = PyUnicode_InternFromString("lazy");
    t.max_inputs = max_inputs;
    g_lazy = t;  // the old registration's references leak (registered once per process)
  });
  m.def("_lazy_apply", &lazy_apply, py::arg("op"), py::arg("operands"),
        "metalcall.numpy's elementwise operation on its common path: the lazy array, or None when "
        "apply() must take its Python path.");
}

}  // namespace metalcall::python
