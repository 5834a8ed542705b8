// The translation verifier's entry points (metalcall/translation_check.hpp), for tests
// and tools: metalcall._core._cpu_translation, _verify_cpu_translation and friends.
#include "bindings.hpp"
#include "metalcall/translation_check.hpp"

namespace metalcall::python {

void init_verify(py::module_& m) {
  m.def("_cpu_translation", [](const std::string& source, bool checked, const py::object& defines) {
    return cpu_translation_text(source, checked, compile_options(defines, py::bool_(true), py::none()).defines);
  }, py::arg("source"), py::arg("checked") = false, py::arg("defines") = py::none(),
        "The C++ the CPU backend compiles for an MSL source (defines: as compile()'s).");
  m.def("_verify_cpu_translation", &verify_cpu_translation, py::arg("code"),
        py::call_guard<py::gil_scoped_release>(),
        "Problems the libclang check finds in a CPU translation (empty: verified); DeviceError without libclang.");
  m.def("_verify_cpu_translation_details", [](const std::string& code, bool precompiled_head, const std::string& head_pch) {
    TranslationCheck check;
    {
      py::gil_scoped_release release;
      check = verify_cpu_translation_details(code, precompiled_head, head_pch);
    }
    return py::make_tuple(check.problems, check.used_precompiled_head);
  }, py::arg("code"), py::arg("precompiled_head") = true, py::arg("head_pch") = "",
        "(problems, whether a precompiled header of the unit's head was read); head_pch: a header file to use.");
  m.def("_check_cpu_translation", &check_cpu_translation, py::arg("code"), py::call_guard<py::gil_scoped_release>(),
        "As a verified cold compile: CompileError naming the problems.");
  m.def("_translation_verifier_library", [] {
    bool found = false;
    std::string text = translation_verifier_library(&found);
    return py::make_tuple(found, text);
  }, "(True, libclang's path) or (False, how to install it).");
  m.def("_translation_verification_requested", &translation_verification_requested);
  m.def("_set_wheel_libclang", &set_wheel_libclang_path, py::arg("path"));
}

}  // namespace metalcall::python
