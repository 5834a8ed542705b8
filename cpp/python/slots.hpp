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

}  // namespace metalcall::python
