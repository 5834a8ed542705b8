// The _core extension module: the bindings of each area in their own file.
#include "bindings.hpp"

PYBIND11_MODULE(_core, m) {
  m.doc() = "metalcall's compiled core; use the metalcall package instead";
  m.attr("__version__") = METALCALL_VERSION_INFO;
  metalcall::python::init_errors(m);
  metalcall::python::init_interrupt(m);
  metalcall::python::init_completion(m);
  metalcall::python::init_buffer(m);
  metalcall::python::init_batch(m);
  metalcall::python::init_device(m);
  metalcall::python::init_library(m);
  metalcall::python::init_kernel(m);
  metalcall::python::init_texture(m);
  metalcall::python::init_dlpack(m);
  metalcall::python::init_cache(m);
  metalcall::python::init_gil(m);
  metalcall::python::init_verify(m);
  metalcall::python::init_fusion(m);
  metalcall::python::init_lazy_nodes(m);
}
