// Shape questions about refkTensor descriptors (Note [Descriptor
// conventions] in RefKernels.h) that both kernel libraries ask, written once
// (Note [One definition per semantics] in Dtypes.h).
#pragma once

#include "kernels/common/Dtypes.h"

namespace refk {

REFK_HOST_DEVICE inline int64_t numel(const refkTensor& t) {
  int64_t n = 1;
  for (int i = 0; i < t.ndim; ++i) n *= t.sizes[i];
  return n;
}

REFK_HOST_DEVICE inline bool same_shape(const refkTensor& a, const refkTensor& b) {
  if (a.ndim != b.ndim) return false;
  for (int d = 0; d < a.ndim; ++d) {
    if (a.sizes[d] != b.sizes[d]) return false;
  }
  return true;
}

}  // namespace refk
