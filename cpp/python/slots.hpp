// The __slots__ members of Python classes read and written in place, as CPython's member
// descriptors do (metalcall.numpy's nodes and arrays: an attribute lookup per access cost more
// than the rest of the work around it).
#pragma once

#include <string>

#include "bindings.hpp"

#include <structmember.h>  // PyMemberDef, T_OBJECT_EX: the layout of __slots__ members

namespace metalcall::python {

/** The byte offset of `type`'s __slots__ member `name` (an object slot); TypeError otherwise. */
inline Py_ssize_t slot_offset(PyTypeObject* type, const char* name) {
  PyObject* d = PyDict_GetItemString(type->tp_dict, name);  // borrowed
  if (!d || !Py_IS_TYPE(d, &PyMemberDescr_Type)) {
    throw py::type_error(std::string("metalcall.numpy: ") + type->tp_name + "." + name + " is not a __slots__ member");
  }
  const PyMemberDef* member = reinterpret_cast<PyMemberDescrObject*>(d)->d_member;
  if (member->type != T_OBJECT_EX) throw py::type_error(std::string("metalcall.numpy: ") + name + " is not an object slot");
  return member->offset;
}

/** The slot's value, borrowed (null while unset). */
inline PyObject* slot_value(PyObject* o, Py_ssize_t offset) {
  return *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(o) + offset);
}

/** Sets an unset slot of a new object, stealing `value`. */
inline void init_slot(PyObject* o, Py_ssize_t offset, PyObject* value) {
  *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(o) + offset) = value;
}

/** metalcall.numpy's expression node classes (_fusion.Op, Leaf, Scalar) and their slots' offsets. */
struct NodeSlots {
  PyTypeObject* op = nullptr;
  PyTypeObject* leaf = nullptr;
  PyTypeObject* scalar = nullptr;
  Py_ssize_t op_op = 0, op_args = 0, op_dtype = 0, op_ct = 0, op_shape = 0, op_buf = 0, op_size = 0, op_ids = 0;
  Py_ssize_t leaf_buf = 0, leaf_offset = 0, leaf_shape = 0, leaf_strides = 0, leaf_dtype = 0, leaf_ids = 0;
  Py_ssize_t scalar_value = 0, scalar_dtype = 0;
};

/** The node classes' slots; references to the classes are kept for the process (registered once). */
inline NodeSlots node_slots(py::handle op, py::handle leaf, py::handle scalar) {
  for (const py::handle& t : {op, leaf, scalar})
    if (!PyType_Check(t.ptr())) throw py::type_error("metalcall.numpy: the fusion node classes are expected");
  NodeSlots t;
  t.op = reinterpret_cast<PyTypeObject*>(op.inc_ref().ptr());
  t.leaf = reinterpret_cast<PyTypeObject*>(leaf.inc_ref().ptr());
  t.scalar = reinterpret_cast<PyTypeObject*>(scalar.inc_ref().ptr());
  t.op_op = slot_offset(t.op, "op");
  t.op_args = slot_offset(t.op, "args");
  t.op_dtype = slot_offset(t.op, "dtype");
  t.op_ct = slot_offset(t.op, "ct");
  t.op_shape = slot_offset(t.op, "shape");
  t.op_buf = slot_offset(t.op, "buf");
  t.op_size = slot_offset(t.op, "size");
  t.op_ids = slot_offset(t.op, "_ids");
  t.leaf_buf = slot_offset(t.leaf, "buf");
  t.leaf_offset = slot_offset(t.leaf, "offset");
  t.leaf_shape = slot_offset(t.leaf, "shape");
  t.leaf_strides = slot_offset(t.leaf, "strides");
  t.leaf_dtype = slot_offset(t.leaf, "dtype");
  t.leaf_ids = slot_offset(t.leaf, "_ids");
  t.scalar_value = slot_offset(t.scalar, "value");
  t.scalar_dtype = slot_offset(t.scalar, "dtype");
  return t;
}

}  // namespace metalcall::python
