// The device's c10d collective backend (Distributed.cpp): its Python entry
// point, added to the extension module by Module.cpp.
#pragma once

#include <pybind11/pybind11.h>

namespace opgen_ref::runtime {

// Defines _C._dist_backend(gloo, check, rank, size): wraps a ProcessGroupGloo
// made in Python into the device's c10d::Backend (Note [Collective staging]);
// `check` (another ProcessGroupGloo of the same ranks, or None) exchanges the
// collectives' fingerprints (Note [Collective fingerprints]).
void bind_distributed(pybind11::module_& m);

}  // namespace opgen_ref::runtime
