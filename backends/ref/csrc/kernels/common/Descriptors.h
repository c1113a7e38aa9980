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

// An optional operand as the kernel uses it, or NULL when absent (no
// descriptor, or a descriptor without data).
inline const refkTensor* or_null(const refkTensor* t) { return t != nullptr && t->data != nullptr ? t : nullptr; }

REFK_HOST_DEVICE inline bool same_shape(const refkTensor& a, const refkTensor& b) {
  if (a.ndim != b.ndim) return false;
  for (int d = 0; d < a.ndim; ++d) {
    if (a.sizes[d] != b.sizes[d]) return false;
  }
  return true;
}

// A contiguous (row-major) descriptor of `like`'s shape over `data`: a
// library's scratch memory, or with data NULL a stand-in that makes a loop
// planner walk in row-major order.
inline refkTensor contiguous_like(void* data, refkDtype dtype, const refkTensor& like) {
  refkTensor t{};
  t.data = data;
  t.dtype = dtype;
  t.ndim = like.ndim;
  int64_t stride = 1;
  for (int d = like.ndim - 1; d >= 0; --d) {
    t.sizes[d] = like.sizes[d];
    t.strides[d] = stride;
    stride *= like.sizes[d];
  }
  return t;
}

}  // namespace refk
