// torch_<device>._C: the Python face of the runtime. Only what the Python
// package needs (torch_<device>/__init__.py builds the device module and the
// fallback API on top of it); everything else reaches the device through
// the dispatcher and the hooks.
#include "runtime/Distributed.h"
#include "runtime/Runtime.h"

#include <torch/csrc/Generator.h>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

namespace py = pybind11;

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  namespace rt = opgen_ref::runtime;
  m.doc() = "device runtime (opgen-backend reference backend)";
  rt::register_deferred_kernels();
  rt::bind_distributed(m);  // _dist_backend (Note [Collective staging])
  m.def("_device_count", [] { return static_cast<int>(rt::device_count()); });
  m.def("_current_device", [] { return static_cast<int>(rt::current_device()); });
  m.def("_set_device", [](int i) { rt::set_device(static_cast<c10::DeviceIndex>(i)); });
  m.def("_is_in_bad_fork", [] { return rt::in_bad_fork(); });
  // torch.<device>.init(): refuses a bad fork, else marks the device used
  // (Note [Fork safety]).
  m.def("_init", [] {
    rt::check_not_forked();
    rt::mark_device_used();
  });
  m.def("_is_initialized", [] { return rt::device_initialized(); });
  m.def("_synchronize", [](int i) { rt::synchronize(static_cast<c10::DeviceIndex>(i)); });
  m.def("_get_default_generator", [](int i) {
    // The Python object borrows the generator, which lives for the process.
    const at::Generator& g = rt::default_generator(static_cast<c10::DeviceIndex>(i));
    return py::reinterpret_steal<py::object>(THPGenerator_initDefaultGenerator(g));
  });
  m.def("_fallback_counts", [] { return rt::fallback_counts(); });
  m.def("_reset_fallback_counts", [] { rt::reset_fallback_counts(); });
  m.def("_set_strict_fallback", [](bool on) { rt::set_strict_fallback(on); });
  m.def("_strict_fallback", [] { return rt::strict_fallback(); });
}
