// metalcall.Library: the kernels of one compiled source.
#include "bindings.hpp"

namespace metalcall::python {

namespace {

// A scalar, or a vector constant's components from a tuple, list or 1-D NumPy array (each
// checked as a scalar; the constant's width and type are checked against the source later).
void set_constant_value(FunctionConstant& c, const py::handle& value) {
  PyObject* o = value.ptr();
  const bool sequence = PyTuple_Check(o) || PyList_Check(o);
  const bool array = !sequence && !PyBool_Check(o) && !PyLong_Check(o) && !PyFloat_Check(o) &&
                     py::isinstance(value, py::module_::import("numpy").attr("ndarray"));
  if (!sequence && !array) {
    c.value = constant_value(value);
    return;
  }
  if (array && py::cast<int>(value.attr("ndim")) != 1)
    throw ArgumentError("a vector function constant takes a 1-D array, not one of shape " +
                        std::string(py::str(value.attr("shape"))));
  // An array's items as Python numbers of its dtype's kind (a float array for an int vector is refused).
  const py::list items(array ? value.attr("tolist")() : py::reinterpret_borrow<py::object>(value));
  std::size_t i = 0;
  for (const py::handle item : items) {
    try {
      c.components.push_back(constant_value(item));
    } catch (const ArgumentError& e) {
      throw ArgumentError("component " + std::to_string(i) + ": " + e.what());
    }
    ++i;
  }
  if (c.components.empty()) throw ArgumentError("a vector function constant takes 2 to 4 values, not an empty sequence");
}

std::vector<FunctionConstant> constants_from(const py::object& constants) {
  std::vector<FunctionConstant> out;
  if (constants.is_none()) return out;
  if (!PyMapping_Check(constants.ptr()) || !py::hasattr(constants, "items")) {
    throw ArgumentError("constants must be a dict (or other mapping) {name_or_index: value}");
  }
  for (const auto& item : constants.attr("items")()) {
    const auto pair = py::reinterpret_borrow<py::tuple>(item);
    const py::handle key = pair[0], value = pair[1];
    FunctionConstant c;
    if (py::isinstance<py::str>(key)) c.name = py::str(key);
    else if (PyIndex_Check(key.ptr()) && !PyBool_Check(key.ptr())) c.index = index_value(key);
    else throw ArgumentError("constants keys are names (str) or indices (int)");
    try {
      set_constant_value(c, value);
    } catch (const ArgumentError& e) {
      const std::string key_text = c.name.empty() ? std::to_string(c.index) : "'" + c.name + "'";
      throw ArgumentError("constants[" + key_text + "]: " + e.what());  // which constant
    }
    out.push_back(std::move(c));
  }
  return out;
}

// A kernel name: a str, else an ArgumentError.
std::string name_of(const py::object& name) {
  if (!py::isinstance<py::str>(name)) {
    throw ArgumentError(std::string("a kernel is named by a str, not ") + Py_TYPE(name.ptr())->tp_name);
  }
  return py::str(name);
}

Kernel lookup(const Library& lib, const std::string& name, const py::object& constants) {
  auto c = constants_from(constants);
  Kernel kernel = [&] {
    WaitScope interruptible;  // Ctrl-C while the sandbox's worker loads it
    GilRelease release;       // a first lookup may build a pipeline
    Kernel k = lib.function(name, c);
    if (InterruptScope::interrupted()) throw Interrupted();  // the check took Ctrl-C: raise it
    return k;
  }();
  give_warnings();  // a full cache folder (metalcall/warnings.hpp)
  return kernel;
}

std::string names_of(const Library& lib) {
  std::string names;
  for (const auto& n : lib.function_names()) names += (names.empty() ? "" : ", ") + n;
  return names.empty() ? "(none)" : names;
}

}  // namespace

void init_library(py::module_& m) {
  py::class_<Library>(m, "Library", py::dynamic_attr(), R"doc(
The kernels of one compiled MSL source. Get one with ``lib.name``,
``lib["name"]`` or ``lib.function(name, constants={...})``.
)doc")
      .def("function", [](const Library& lib, const py::object& name, const py::object& constants) {
        return lookup(lib, name_of(name), constants);
      }, py::arg("name"), py::arg("constants") = py::none(),
           "The kernel `name`, specialised with [[function_constant]] values by name or index; a vector "
           "constant (ushort2, float4 ...) takes a tuple, list or 1-D NumPy array of its components.")
      .def("__getitem__", [](const Library& lib, const py::object& name) { return lookup(lib, name_of(name), py::none()); })
      .def("__getattr__", [](py::object self, const std::string& name) {
        const Library& lib = self.cast<const Library&>();
        try {
          py::object kernel = py::cast(lookup(lib, name, py::none()));
          // Kept in the instance dict: the next lib.name skips __getattr__ entirely.
          py::setattr(self, py::str(name), kernel);
          return kernel;
        } catch (const ArgumentError& e) {
          if (lib.has_function(name)) throw;  // it exists: the error is about something else
          throw py::attribute_error(std::string("this library has no kernel named '") + name + "'; it has: " +
                                    names_of(lib));
        }
      })
      .def("__contains__", [](const Library& lib, const py::object& name) {
        return py::isinstance<py::str>(name) && lib.has_function(py::str(name));  // like a dict: other keys are absent
      })
      .def("__iter__", [](const Library& lib) { return py::iter(py::cast(lib.function_names())); })
      .def("__len__", [](const Library& lib) { return lib.function_names().size(); })
      .def("__dir__", [](py::object self) {
        py::list out = py::module_::import("builtins").attr("list")(py::type::of(self).attr("__dict__").attr("keys")());
        for (const auto& n : self.cast<const Library&>().function_names()) out.append(n);
        return out;
      })
      .def_property_readonly("function_names", &Library::function_names, "Names of the kernels, in source order.")
      .def("__repr__", [](const Library& lib) { return "<metalcall.Library [" + names_of(lib) + "]>"; });
}

}  // namespace metalcall::python
