// The loop planner, written once for both devices (Note [One definition per
// semantics] in Dtypes.h): operands of one shape become byte strides over
// coalesced dims (TensorIterator's job in ATen, reduced to what a kernel
// library needs). The CPU library's Loop (cpu/Common.h) and Plan
// (cpu/Indexing.h) run rows over it on host threads; the CUDA library's
// launches (cuda/Common.cuh) pass it to kernels by value as their offset
// calculator.
//
// Note [Loop plans]: size-1 dims are dropped, the rest ordered by |stride|
// (the first operand whose strides differ decides, largest first, stable),
// so the lead operand's fastest dim is innermost, and a dim is merged into
// the one outside it where every operand steps over it exactly. A single
// element (a 0-d operand, or only size-1 dims) is one dim of size 1 whose
// stride is each operand's item size: a dense run, so the contiguous fast
// paths of both devices take it.
#pragma once

#include "kernels/common/Dtypes.h"

namespace refk {

// Up to N operands (operand 0 leads: the output, or what the loop follows).
template <int N>
struct LoopPlan {
  int nops = 0;
  int ndim = 0;
  bool contiguous = false;  // one dim, every operand dense (stride == itemsize)
  int64_t numel = 1;
  int64_t sizes[REFK_MAX_DIMS] = {};
  int64_t strides[N][REFK_MAX_DIMS] = {};

  LoopPlan() = default;

  // Plans ops[0, n), n <= N, all of ops[0]'s shape.
  REFK_HOST_DEVICE LoopPlan(const refkTensor* const* ops, int n) : nops(n) {
    const refkTensor& lead = *ops[0];
    int order[REFK_MAX_DIMS];
    int m = 0;
    for (int d = 0; d < lead.ndim; ++d) {
      numel *= lead.sizes[d];
      if (lead.sizes[d] != 1) order[m++] = d;
    }
    // Insertion sort (stable), by |stride| of the first operand that differs.
    const auto before = [&](int x, int y) {
      for (int k = 0; k < n; ++k) {
        const int64_t sx = ops[k]->strides[x] < 0 ? -ops[k]->strides[x] : ops[k]->strides[x];
        const int64_t sy = ops[k]->strides[y] < 0 ? -ops[k]->strides[y] : ops[k]->strides[y];
        if (sx != sy) return sx > sy;
      }
      return false;
    };
    for (int i = 1; i < m; ++i) {
      const int d = order[i];
      int j = i;
      while (j > 0 && before(d, order[j - 1])) {
        order[j] = order[j - 1];
        --j;
      }
      order[j] = d;
    }
    for (int i = 0; i < m; ++i) {
      const int d = order[i];
      const int64_t size = lead.sizes[d];
      bool merge = ndim > 0;
      for (int k = 0; k < n && merge; ++k) {
        merge = strides[k][ndim - 1] == ops[k]->strides[d] * itemsize(ops[k]->dtype) * size;
      }
      const int at = merge ? ndim - 1 : ndim;
      if (merge) {
        sizes[at] *= size;
      } else {
        sizes[at] = size;
        ++ndim;
      }
      for (int k = 0; k < n; ++k) strides[k][at] = ops[k]->strides[d] * itemsize(ops[k]->dtype);
    }
    if (ndim == 0) {  // a single element
      sizes[0] = 1;
      for (int k = 0; k < n; ++k) strides[k][0] = itemsize(ops[k]->dtype);
      ndim = 1;
    }
    contiguous = ndim == 1;
    for (int k = 0; k < n && contiguous; ++k) contiguous = strides[k][0] == itemsize(ops[k]->dtype);
  }

  // The byte offset of every operand's element i (in the lead's row-major
  // order over the coalesced dims).
  REFK_HOST_DEVICE void at(int64_t i, int64_t (&off)[N]) const {
    for (int k = 0; k < N; ++k) off[k] = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t idx = i % sizes[d];
      i /= sizes[d];
      for (int k = 0; k < N; ++k) off[k] += idx * strides[k][d];
    }
  }
};

}  // namespace refk
