// The scalar semantics of nll_loss and of the embedding gradient, written
// once for every device (Note [One definition per semantics] in Dtypes.h):
// what one loss element, the reduced loss and one gradient element are,
// and how one gradient row is added into an embedding row. The CPU library
// threads over the batch or over weight rows, the CUDA library runs a
// thread per element or column.
#pragma once

#include "kernels/common/Dtypes.h"

namespace refk {
namespace loss {

// A loss element of reduction none: -self[i, t] * w[t], rounded once.
template <class T>
REFK_HOST_DEVICE inline T nll_element(opmath_t<T> x, opmath_t<T> w) {
  return store<T>(-x * w);
}

// A reduced loss from the double sums over counted targets of -x * w
// (loss) and of w (weights): total_weight is the weights rounded to T; the
// sum is rounded to T, and the mean divides the rounded values.
template <class T>
REFK_HOST_DEVICE inline void nll_reduced(double loss, double weights, bool mean, T& out, T& total_weight) {
  const T tw = store<T>(weights);
  total_weight = tw;
  const T sum = store<T>(loss);
  out = mean ? store<T>(load(sum) / load(tw)) : sum;
}

// The gradient's shared factor for reduced losses (and one-sample losses
// given as a single value): -(g / total_weight) for the mean, -g otherwise,
// with g / total_weight rounded to the dtype before it is negated and
// scaled (as ATen).
template <class T>
REFK_HOST_DEVICE inline opmath_t<T> nll_grad_shared(opmath_t<T> g, opmath_t<T> total_weight, bool mean) {
  if (mean) g = load(store<T>(g / total_weight));
  return load(store<T>(-g));
}
// The gradient element at a counted target: per-element losses scale their
// own incoming gradient, reduced ones the shared factor.
template <class T>
REFK_HOST_DEVICE inline T nll_grad_element(opmath_t<T> w, opmath_t<T> g_i, opmath_t<T> shared, bool per_element) {
  return per_element ? store<T>(-w * g_i) : store<T>(w * shared);
}

// ATen's grad_weight[k].add_(grad[i], scale) for one element: one rounding
// per addition, and in the half types alpha and alpha * grad rounded too
// (ATen's add ufunc); bool adds as "or".
template <class T>
REFK_HOST_DEVICE inline T embedding_add(T acc, T g, opmath_t<T> scale) {
  if constexpr (std::is_same_v<T, bool>) {
    return acc || g;
  } else if constexpr (is_half_v<T>) {
    const opmath_t<T> alpha = load(store<T>(scale));
    return store<T>(load(acc) + load(store<T>(alpha * load(g))));
  } else {
    return store<T>(load(acc) + scale * load(g));
  }
}

// 1 / (the row's count in indices) with scale_grad_by_freq, else 1.
REFK_HOST_DEVICE inline double embedding_scale(bool by_freq, int64_t count) {
  return by_freq ? 1.0 / static_cast<double>(count) : 1.0;
}

}  // namespace loss
}  // namespace refk
