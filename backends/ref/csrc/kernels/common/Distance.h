// p-norm distances between rows (cdist, pdist), written once for every
// device (Note [One definition per semantics] in Dtypes.h): one row pair's
// distance, summed in double along the rows in order, and the operand
// checks. The CPU library threads over ranges of outputs, the CUDA library
// runs a thread per output; both give every output the same sum.
#pragma once

#include "kernels/common/Dtypes.h"

#include <cmath>

namespace refk {
namespace dist {

// The p-norm of a - b over m elements (strides as, bs).
template <class T>
REFK_HOST_DEVICE inline double distance(const T* a, int64_t as, const T* b, int64_t bs, int64_t m, double p) {
  double acc = 0;
  if (p == 0) {
    for (int64_t k = 0; k < m; ++k) acc += a[k * as] != b[k * bs] ? 1.0 : 0.0;
    return acc;
  }
  if (p == 1) {
    for (int64_t k = 0; k < m; ++k) acc += std::fabs(static_cast<double>(a[k * as]) - static_cast<double>(b[k * bs]));
    return acc;
  }
  if (p == 2) {
    for (int64_t k = 0; k < m; ++k) {
      const double d = static_cast<double>(a[k * as]) - static_cast<double>(b[k * bs]);
      acc += d * d;
    }
    return std::sqrt(acc);
  }
  if (std::isinf(p)) {
    for (int64_t k = 0; k < m; ++k) {
      const double d = std::fabs(static_cast<double>(a[k * as]) - static_cast<double>(b[k * bs]));
      acc = std::isnan(d) || d > acc ? d : acc;
      if (std::isnan(acc)) break;
    }
    return acc;
  }
  for (int64_t k = 0; k < m; ++k) {
    acc += std::pow(std::fabs(static_cast<double>(a[k * as]) - static_cast<double>(b[k * bs])), p);
  }
  return std::pow(acc, 1.0 / p);
}

// The pair (i, j), i < j, of pdist's output e over n rows (row-major over
// the pairs): row i owns n - 1 - i pairs, in order.
REFK_HOST_DEVICE inline void pdist_pair(int64_t e, int64_t n, int64_t& i, int64_t& j) {
  int64_t first = 0;
  i = 0;
  while (first + (n - 1 - i) <= e) first += n - 1 - i++;
  j = i + 1 + (e - first);
}

}  // namespace dist

namespace check {

inline const char* cdist(const refkTensor& out, const refkTensor& x1, const refkTensor& x2) {
  const bool ok = out.ndim == 3 && x1.ndim == 3 && x2.ndim == 3 && x1.dtype == out.dtype && x2.dtype == out.dtype &&
                  x1.sizes[0] == out.sizes[0] && x2.sizes[0] == out.sizes[0] && x1.sizes[1] == out.sizes[1] &&
                  x2.sizes[1] == out.sizes[2] && x1.sizes[2] == x2.sizes[2];
  return ok ? nullptr : "cdist: inconsistent operands";
}

inline const char* pdist(const refkTensor& out, const refkTensor& x) {
  const bool ok = out.ndim == 1 && x.ndim == 2 && x.dtype == out.dtype &&
                  out.sizes[0] == x.sizes[0] * (x.sizes[0] - 1) / 2;
  return ok ? nullptr : "pdist: inconsistent operands";
}

}  // namespace check
}  // namespace refk
