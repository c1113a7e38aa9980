// The CPU side of the index space in common/Spatial.h (Note [Spatial dims]
// in RefKernels.h): the CPU's own helpers over it.
#pragma once

#include "kernels/common/Spatial.h"
#include "kernels/cpu/Common.h"

namespace refk {

template <class T>
inline bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

}  // namespace refk
