// The arithmetic of max, average and adaptive average pooling and their
// gradients (refkPool, refkPoolBackward in RefKernels.h), written once for
// every device (Note [One definition per semantics] in Dtypes.h): each
// output position's window per spatial dim, the output positions whose
// windows cover an input position, the divisor, the max rule (ties keep the
// first, NaN takes over), how a sum accumulates in its compute type, and
// the entry checks. The CPU library threads over rows of outputs with the
// lane innermost (cpu/Pool.cpp); the CUDA library runs a thread per output
// (forward), per input element (average gradients) or per plane (the max
// gradient's scatter, in output order), over common/Spatial.h's index space.
#pragma once

#include "kernels/common/Checks.h"
#include "kernels/common/Spatial.h"

#include <limits>
#include <type_traits>

namespace refk {
namespace pool {

// Positions [begin, end) step `step` of one spatial dim; `count` is the
// divisor's factor (the padded length for avg_pool, the length for adaptive).
struct Window {
  int64_t begin, end, step, count;
};

// The output positions [lo, hi) whose windows contain an input position.
struct Cover {
  int64_t lo, hi;
};

REFK_HOST_DEVICE inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
REFK_HOST_DEVICE inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

// Parameters padded to three spatial dims (leading dims: window 1, stride 1).
struct Geometry {
  refkPoolMode mode;
  int64_t kernel[3] = {1, 1, 1}, stride[3] = {1, 1, 1}, padding[3] = {0, 0, 0}, dilation[3] = {1, 1, 1};
  bool count_include_pad = true;
  int64_t divisor = 0;
  int nspatial = 0;

  Geometry(refkPoolMode m, const refkPoolParams& p) : mode(m), count_include_pad(p.count_include_pad != 0),
                                                      divisor(p.divisor), nspatial(p.nspatial) {
    for (int i = 0; i < p.nspatial; ++i) {
      const int d = 3 - p.nspatial + i;
      kernel[d] = p.kernel[i];
      stride[d] = p.stride[i];
      padding[d] = p.padding[i];
      dilation[d] = p.dilation[i];
    }
  }

  // The window of output position o along dim d (input size in, output size out).
  REFK_HOST_DEVICE Window window(int d, int64_t o, int64_t in, int64_t out) const {
    switch (mode) {
      case refkPoolMax: {
        int64_t b = o * stride[d] - padding[d];
        const int64_t e = min64(b + (kernel[d] - 1) * dilation[d] + 1, in);
        if (b < 0) b += (-b + dilation[d] - 1) / dilation[d] * dilation[d];
        return {b, e, dilation[d], 0};
      }
      case refkPoolAvg: {
        const int64_t b = o * stride[d] - padding[d];
        const int64_t e = min64(b + kernel[d], in + padding[d]);
        return {max64(b, 0), min64(e, in), 1, e - b};
      }
      case refkPoolAdaptiveAvg: {
        const int64_t b = o * in / out, e = ((o + 1) * in + out - 1) / out;
        return {b, e, 1, e - b};
      }
    }
    return {0, 0, 1, 1};
  }

  // The output positions along dim d whose windows contain input position i
  // (averages only).
  REFK_HOST_DEVICE Cover covering(int d, int64_t i, int64_t in, int64_t out) const {
    if (mode == refkPoolAdaptiveAvg) return {i * out / in, ((i + 1) * out - 1) / in + 1};
    // o * s - p <= i < o * s - p + k
    const int64_t num = i + padding[d] - kernel[d] + 1;
    const int64_t lo = num <= 0 ? 0 : (num + stride[d] - 1) / stride[d];
    const int64_t hi = min64((i + padding[d]) / stride[d] + 1, out);
    return {lo, max64(lo, hi)};
  }

  // Note [Adaptive 3-d averages of half types]: ATen's CPU
  // adaptive_avg_pool3d sums float16/bfloat16 in the type itself, rounding
  // every addition and each division; its float16 results differ from a
  // float sum by more than float16's tolerance, so this one case does too.
  REFK_HOST_DEVICE bool sums_in_storage() const { return mode == refkPoolAdaptiveAvg && nspatial == 3; }
};

// What averages sum in: opmath for floating types, int64 otherwise.
template <class T>
using sum_t = std::conditional_t<is_floating_v<T>, opmath_t<T>, int64_t>;

// The divisor of an average window (product over dims).
template <class A>
REFK_HOST_DEVICE A divide(A sum, const Geometry& g, const Window (&w)[3]) {
  if (g.mode == refkPoolAdaptiveAvg) return sum / A(w[0].count) / A(w[1].count) / A(w[2].count);
  int64_t n;
  if (g.divisor != 0) {
    n = g.divisor;
  } else if (g.count_include_pad) {
    n = w[0].count * w[1].count * w[2].count;
  } else {
    n = (w[0].end - w[0].begin) * (w[1].end - w[1].begin) * (w[2].end - w[2].begin);
  }
  return sum / A(n);
}

// A value rounded to the storage type T and back (the half types' rule).
template <class T, class S>
REFK_HOST_DEVICE S rounded(S v) {
  return load(store<T>(v));
}

// The max rule: v replaces the best so far when greater, or when NaN.
template <class M>
REFK_HOST_DEVICE bool takes(M v, M best) {
  if constexpr (std::is_floating_point_v<M>) {
    return v > best || v != v;
  } else {
    return v > best;
  }
}

// Where a max starts: -inf, or the lowest value of a type without infinity.
template <class M>
REFK_HOST_DEVICE M lowest() {
  if constexpr (std::numeric_limits<M>::has_infinity) {
    return -std::numeric_limits<M>::infinity();
  } else {
    return std::numeric_limits<M>::lowest();
  }
}

// A forward average: one input element x added to the sum (in the storage
// type under Note [Adaptive 3-d averages of half types]).
template <class T>
REFK_HOST_DEVICE sum_t<T> add(sum_t<T> acc, sum_t<T> x, bool in_storage) {
  if constexpr (is_half_v<T>) {
    if (in_storage) return rounded<T>(acc + x);
  }
  return acc + x;
}

// A forward average's result from its window's sum: divided when every
// window dim is nonempty (an empty window gives 0).
template <class T>
REFK_HOST_DEVICE sum_t<T> average(sum_t<T> sum, const Geometry& g, const Window (&w)[3], bool in_storage) {
  using S = sum_t<T>;
  if constexpr (is_half_v<T>) {
    if (in_storage) return rounded<T>(rounded<T>(sum / S(w[0].count)) / S(w[1].count)) / S(w[2].count);
  }
  if (w[0].begin < w[0].end && w[1].begin < w[1].end && w[2].begin < w[2].end) return divide(sum, g, w);
  return sum;
}

// An average gradient: grad_out element v of the window w added to an input
// element's sum. ATen's CPU average gradients compute half types in the type
// itself: every division and addition rounds.
template <class T>
REFK_HOST_DEVICE sum_t<T> add_gradient(sum_t<T> acc, sum_t<T> v, const Geometry& g, const Window (&w)[3]) {
  using S = sum_t<T>;
  if constexpr (is_half_v<T>) {
    const S delta = g.mode == refkPoolAdaptiveAvg
                        ? rounded<T>(rounded<T>(rounded<T>(v / S(w[0].count)) / S(w[1].count)) / S(w[2].count))
                        : rounded<T>(divide(v, g, w));
    return rounded<T>(acc + delta);
  } else {
    return acc + divide(v, g, w);
  }
}

// Side B's flat position `at` (row-major over the spatial dims) as an
// element offset with strides st.
REFK_HOST_DEVICE inline int64_t offset_of(int64_t at, const int64_t (&n)[3], const int64_t (&st)[3]) {
  return at / (n[1] * n[2]) * st[0] + at / n[2] % n[1] * st[1] + at % n[2] * st[2];
}

}  // namespace pool

namespace check {

// Side a (in, grad_in) and side b (out, grad_out) of a pooling call.
inline Verdict pool_operands(const char* op, const refkTensor& a, const refkTensor& b, const refkPoolParams& p) {
  if (p.nspatial < 1 || p.nspatial > 3 || a.ndim != b.ndim || a.ndim < p.nspatial) {
    return Verdict::invalid(op, "operands must have nspatial (1 to 3) trailing dims");
  }
  for (int d = 0; d < a.ndim - p.nspatial; ++d) {
    if (a.sizes[d] != b.sizes[d]) return Verdict::invalid(op, "plane dims differ");
  }
  return {};
}

inline Verdict pool(refkPoolMode mode, const refkTensor& out, const refkTensor* indices, const refkTensor& in,
                    const refkPoolParams& p) {
  if (Verdict v = pool_operands("refkPool", in, out, p); v.error != nullptr) return v;
  if (out.dtype != in.dtype) return Verdict::invalid("refkPool", "out and in dtypes differ");
  const bool is_max = mode == refkPoolMax;
  if (is_max && (indices == nullptr || indices->dtype != refkInt64 || !same_shape(*indices, out))) {
    return Verdict::invalid("refkPool", "max pooling needs int64 indices of out's shape");
  }
  if (in.dtype == refkBool || (!is_max && !(in.dtype >= refkFloat16 || in.dtype == refkInt64))) {
    return Verdict::unsupported("refkPool", in.dtype);
  }
  return {};
}

inline Verdict pool_backward(refkPoolMode mode, const refkTensor& grad_in, const refkTensor& grad_out,
                             const refkTensor* indices, const refkPoolParams& p) {
  if (Verdict v = pool_operands("refkPoolBackward", grad_in, grad_out, p); v.error != nullptr) return v;
  if (grad_out.dtype != grad_in.dtype) return Verdict::invalid("refkPoolBackward", "dtypes differ");
  const bool is_max = mode == refkPoolMax;
  if (is_max && (indices == nullptr || indices->dtype != refkInt64 || !same_shape(*indices, grad_out))) {
    return Verdict::invalid("refkPoolBackward", "max pooling needs int64 indices of grad_out's shape");
  }
  if (!(grad_in.dtype >= refkFloat16 || (grad_in.dtype == refkInt64 && mode == refkPoolAvg))) {
    return Verdict::unsupported("refkPoolBackward", grad_in.dtype);
  }
  return {};
}

}  // namespace check
}  // namespace refk
