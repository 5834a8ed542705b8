// metalcall.Error and its subclasses, and the translation of C++ errors to them.
#include "bindings.hpp"

namespace metalcall::python {

namespace {
PyObject* g_error = nullptr;
PyObject* g_compile_error = nullptr;
PyObject* g_argument_error = nullptr;
PyObject* g_execution_error = nullptr;
PyObject* g_device_error = nullptr;
PyObject* g_cache_warning = nullptr;

// Text for Python: invalid UTF-8 (from a bytes source) shows as U+FFFD instead of failing.
py::object text(const std::string& s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
  if (!o) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(o);
}

void set_error(PyObject* cls, const char* message) { PyErr_SetObject(cls, text(message).ptr()); }

PyObject* make_class(py::module_& m, const char* name, PyObject* base, const char* doc) {
  const std::string qualified = std::string("metalcall.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base, nullptr);
  if (!cls) throw py::error_already_set();
  m.add_object(name, py::handle(cls));
  return cls;
}
}  // namespace

void give_warnings() {
  for (const std::string& message : take_warnings())
    if (PyErr_WarnEx(g_cache_warning, message.c_str(), 1) != 0) throw py::error_already_set();
}

void init_errors(py::module_& m) {
  g_error = make_class(m, "Error", PyExc_RuntimeError, "Base of every error metalcall raises.");
  g_compile_error = make_class(m, "CompileError", g_error,
                               "The kernel source did not compile. Attributes: log, line, column, source_line.");
  // A bad argument is a misuse Python code catches as TypeError (wrong kind of object) or
  // ValueError (right kind, bad value): ArgumentError is both, and still an mc.Error.
  py::tuple argument_bases = py::make_tuple(py::handle(g_error), py::handle(PyExc_TypeError), py::handle(PyExc_ValueError));
  g_argument_error = make_class(m, "ArgumentError", argument_bases.ptr(),
                                "A call's arguments, grid or threadgroup do not fit the kernel (also a TypeError "
                                "and a ValueError).");
  g_execution_error = make_class(m, "ExecutionError", g_error, "The device reported a fault while running work.");
  g_device_error = make_class(m, "DeviceError", g_error, "A backend or device is unavailable; the message says why.");
  g_cache_warning = make_class(m, "CacheWarning", PyExc_RuntimeWarning,
                               "The kernel cache could not be used as usual (a full disk): the compile went on in "
                               "another folder. Given once per folder and process.");

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const CompileError& e) {
      py::object exc = py::reinterpret_steal<py::object>(PyObject_CallFunctionObjArgs(g_compile_error, text(e.what()).ptr(), nullptr));
      if (!exc) return;
      exc.attr("log") = text(e.log());
      exc.attr("line") = e.line() ? py::object(py::int_(e.line())) : py::object(py::none());
      exc.attr("column") = e.column() ? py::object(py::int_(e.column())) : py::object(py::none());
      exc.attr("source_line") = text(e.source_line());
      PyErr_SetObject(g_compile_error, exc.ptr());
    } catch (const Interrupted&) {
      restore_interrupt();  // what the signal handler raised (KeyboardInterrupt)
    } catch (const ArgumentError& e) {
      set_error(g_argument_error, e.what());
    } catch (const ExecutionError& e) {
      set_error(g_execution_error, e.what());
    } catch (const DeviceError& e) {
      set_error(g_device_error, e.what());
    } catch (const Error& e) {
      set_error(g_error, e.what());
    }
  });
}

}  // namespace metalcall::python
