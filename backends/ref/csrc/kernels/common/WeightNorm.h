// Weight normalization's per-slice arithmetic (refkWeightNorm and its
// gradient, RefKernels.h), written once for both libraries (Note [One
// definition per semantics] in Dtypes.h). A slice is every element of v
// with one index j along `dim`; its sums are accumulated in double by each
// library, and everything after them is here, in double.
#pragma once

#include "kernels/common/Dtypes.h"

#include <cmath>

namespace refk {
namespace weight_norm {

// norm = sqrt(sum of v^2 over the slice); w = v * scale.
REFK_HOST_DEVICE inline double norm_of(double sum_squares) { return std::sqrt(sum_squares); }
REFK_HOST_DEVICE inline double scale(double g, double norm) { return g / norm; }

// From s = sum(grad_w * v) over the slice: grad_g = s / norm and
// grad_v = a * grad_w - b * v with a = g / norm, b = a * grad_g / norm
// (ATen's formula: grad_v = (g / norm) * (grad_w - v * s / norm^2)).
struct Gradient {
  double grad_g, a, b;
};
REFK_HOST_DEVICE inline Gradient gradient(double g, double norm, double s) {
  const double grad_g = s / norm;
  const double a = g / norm;
  return Gradient{grad_g, a, a * grad_g / norm};
}

template <class T>
REFK_HOST_DEVICE inline T weighted(T v, double scale) {
  return store<T>(static_cast<opmath_t<T>>(static_cast<double>(load(v)) * scale));
}
template <class T>
REFK_HOST_DEVICE inline T grad_v(T grad_w, T v, const Gradient& c) {
  return store<T>(
      static_cast<opmath_t<T>>(c.a * static_cast<double>(load(grad_w)) - c.b * static_cast<double>(load(v))));
}

}  // namespace weight_norm
}  // namespace refk
