// torch_<device>._C: the Python face of the runtime. Only what the Python
// package needs (torch_<device>/__init__.py builds the device module and the
// fallback API on top of it); everything else reaches the device through
// the dispatcher and the hooks.
#include "runtime/Distributed.h"
#include "runtime/Runtime.h"

#include <torch/csrc/Generator.h>
#include <torch/csrc/autograd/python_variable.h>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <exception>
#include <vector>

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
  // Note [Kernel scope] (driver/RefDriver.h): the wrapper that
  // torch_<device>._inductor generates calls this for every kernel Inductor
  // compiled for the device: kernel(*args) runs through the driver, on the
  // current stream, with the storages of the device tensors among args open.
  m.def("_launch_host_kernel", [](py::handle kernel, const py::tuple& args) {
    std::vector<const void*> storages;
    for (const py::handle a : args) {
      if (!THPVariable_Check(a.ptr())) continue;
      const at::Tensor& t = THPVariable_Unpack(a.ptr());
      if (t.defined() && t.is_privateuseone() && t.has_storage() && t.storage().nbytes() > 0) {
        storages.push_back(t.storage().data());
      }
    }
    struct Call {
      py::handle kernel;
      const py::tuple& args;
      std::exception_ptr error;
    } call{kernel, args, nullptr};
    const refHostFn run = [](void* user) {
      auto* c = static_cast<Call*>(user);
      try {
        c->kernel(*c->args);
      } catch (...) {  // the driver is C: nothing may unwind through it
        c->error = std::current_exception();
      }
    };
    rt::driver_check(refLaunchHostFunc(rt::current_stream(), storages.data(), storages.size(), run, &call),
                     "launch of a compiled kernel");
    if (call.error) std::rethrow_exception(call.error);
  });
}
