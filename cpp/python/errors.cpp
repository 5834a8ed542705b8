// metalcall.Error and its subclasses, and the translation of C++ errors to them.
#include "bindings.hpp"

namespace metalcall::python {

namespace {
PyObject* g_error = nullptr;
PyObject* g_compile_error = nullptr;
PyObject* g_argument_error = nullptr;
PyObject* g_execution_error = nullptr;
PyObject* g_device_error = nullptr;

PyObject* make_class(py::module_& m, const char* name, PyObject* base, const char* doc) {
  const std::string qualified = std::string("metalcall.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base, nullptr);
  if (!cls) throw py::error_already_set();
  m.add_object(name, py::handle(cls));
  return cls;
}
}  // namespace

void init_errors(py::module_& m) {
  g_error = make_class(m, "Error", PyExc_RuntimeError, "Base of every error metalcall raises.");
  g_compile_error = make_class(m, "CompileError", g_error,
                               "The kernel source did not compile. Attributes: log, line, column, source_line.");
  // ArgumentError is also a ValueError/TypeError-like misuse; keep it a plain subclass.
  g_argument_error = make_class(m, "ArgumentError", g_error,
                                "A call's arguments, grid or threadgroup do not fit the kernel.");
  g_execution_error = make_class(m, "ExecutionError", g_error, "The device reported a fault while running work.");
  g_device_error = make_class(m, "DeviceError", g_error, "A backend or device is unavailable; the message says why.");

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const CompileError& e) {
      py::object exc = py::reinterpret_steal<py::object>(PyObject_CallFunction(g_compile_error, "s", e.what()));
      if (!exc) return;
      exc.attr("log") = py::str(e.log());
      exc.attr("line") = e.line() ? py::object(py::int_(e.line())) : py::object(py::none());
      exc.attr("column") = e.column() ? py::object(py::int_(e.column())) : py::object(py::none());
      exc.attr("source_line") = py::str(e.source_line());
      PyErr_SetObject(g_compile_error, exc.ptr());
    } catch (const ArgumentError& e) {
      PyErr_SetString(g_argument_error, e.what());
    } catch (const ExecutionError& e) {
      PyErr_SetString(g_execution_error, e.what());
    } catch (const DeviceError& e) {
      PyErr_SetString(g_device_error, e.what());
    } catch (const Error& e) {
      PyErr_SetString(g_error, e.what());
    }
  });
}

}  // namespace metalcall::python
