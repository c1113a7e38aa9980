// The scalar semantics of softmax and the norms, written once for every
// device (Note [One definition per semantics] in Dtypes.h): the exponential
// the rows use, each result element given its row's statistics, and each
// gradient element given its row's sums. The CPU library runs them over
// rows in per-thread scratch (Note [Row kernels] in cpu/Common.h), the CUDA
// library over rows in a block each; both sum a row's terms in double.
#pragma once

#include "kernels/common/Dtypes.h"

namespace refk {
namespace norm {

// exp in straight-line float arithmetic (a CPU compiler vectorizes it; libm's
// expf is a call per element), for c already clamped to [-104, 89]: c = k ln2
// + r with |r| <= ln2 / 2 (Cody-Waite), exp(r) by Cephes' degree-6 polynomial
// (within 2 ulp of exp), times 2^k built in the exponent bits in two halves,
// so that every k of the range stays a normal float and the product rounds
// once: results underflow to subnormals and 0 and overflow to inf as exp's
// do, and NaN stays NaN.
REFK_HOST_DEVICE inline float exp_clamped(float c) {
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float k = (c * 1.44269504088896341f + kRound) - kRound;
  const float r = (c - k * 0.693359375f) + k * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t ki = static_cast<int32_t>(k);
  const int32_t k1 = ki / 2;
  const float s1 = bits_to_float(static_cast<uint32_t>(k1 + 127) << 23);
  const float s2 = bits_to_float(static_cast<uint32_t>(ki - k1 + 127) << 23);
  return p * s1 * s2;
}

// The clamp exp_clamped needs (NaN stays NaN).
REFK_HOST_DEVICE inline float exp_clamp(float c) {
  const float hi = c > 89.0f ? 89.0f : c;
  return hi < -104.0f ? -104.0f : hi;
}

// exp(x - shift) in the compute type C of a row: exp_clamped for float,
// std::exp for double.
template <class C>
REFK_HOST_DEVICE inline C exp_shifted(C x, C shift) {
  if constexpr (std::is_same_v<C, float>) {
    return exp_clamped(exp_clamp(x - shift));
  } else {
    return std::exp(x - shift);
  }
}

// ATen's CPU log_softmax of float16/bfloat16 along the last dim rounds the
// sum of exponentials to the dtype before its log; both libraries do, to
// give the same results.
template <class T>
REFK_HOST_DEVICE inline bool log_softmax_rounds_sum(int ndim, int dim) {
  return is_half_v<T> && (ndim == 0 || dim == ndim - 1);
}
template <class T>
REFK_HOST_DEVICE inline double log_softmax_sum(double sum, bool round) {
  if constexpr (is_half_v<T>) {
    if (round) return load(store<T>(sum));
  }
  return sum;
}

// A result element from its row's max and sum of exp(x - max): softmax
// multiplies by the inverse of the sum, log_softmax subtracts the log of it.
template <class C>
REFK_HOST_DEVICE inline C softmax_inverse(double sum) {
  return C(1.0 / sum);
}
template <class C>
REFK_HOST_DEVICE inline C log_softmax_value(C x, C max, C log_sum) {
  return (x - max) - log_sum;
}

// Gradient elements from the row sums s: softmax's s = sum(grad * out),
// log_softmax's s = sum(grad) (exp_out = exp(out)).
template <class C>
REFK_HOST_DEVICE inline C softmax_grad(C grad, C out, C s) {
  return out * (grad - s);
}
template <class C>
REFK_HOST_DEVICE inline C log_softmax_grad(C grad, C exp_out, C s) {
  return grad - exp_out * s;
}

// Note [Norm precision]: batch, layer and group norm compute their
// statistics and every element's normalization in double for every dtype,
// forward and backward: the mean and the sum of squared deviations from it
// (two passes), (x - mean) * rstd, and the gradient's row sums and
// rstd * (gw - a - xhat * b), rounded to the dtype once at the end. In float
// they cancel where the data is ill-conditioned: a mean far from 0 next to a
// small spread, and few elements per channel (batch norm over N*H*W = 2, where
// xhat is +-1 and the input gradient is almost all cancellation), and the
// reference kernels were then several times less accurate than eager CPU
// (which sums in double, acc_type), in issue 23's conv nets 4-5x. Training
// normalizes with the statistics in double, not as saved in the stats'
// dtype: eager's rounded mean costs it digits at a large mean offset.
// Note [Precision rule] in the runner's compare.py judges this against a
// float64 run; its ill-conditioned samples are sources/handmade.py's.
using stat_t = double;

REFK_HOST_DEVICE inline double rstd_of(double var, double eps) { return 1.0 / std::sqrt(var + eps); }

// Row statistics from the row's sums: the mean from the sum of x, the
// biased variance from the sum of (x - C(mean))^2 (two passes). An empty
// row has mean 0 and variance NaN, as ATen's.
REFK_HOST_DEVICE inline double mean_of(double sum, int64_t n) {
  return n == 0 ? 0.0 : sum / static_cast<double>(n);
}
REFK_HOST_DEVICE inline double var_of(double m2, int64_t n) { return m2 / static_cast<double>(n); }

// xhat = (x - mean) * rstd, and the layer norm's affine result.
template <class C>
REFK_HOST_DEVICE inline C normalized(C x, C mean, C rstd) {
  return (x - mean) * rstd;
}
template <class C>
REFK_HOST_DEVICE inline C affine(C xhat, C w, C b) {
  return xhat * w + b;
}

// The gradient through xhat = (x - mean) * rstd of a row whose weighted
// incoming gradient is gw (= grad * weight), given a = mean(gw) and
// b = mean(gw * xhat) over the row: rstd * (gw - a - xhat * b).
template <class C>
REFK_HOST_DEVICE inline C normalize_grad(C gw, C xhat, C a, C b, C rstd) {
  return rstd * (gw - a - xhat * b);
}
// a and b from the row sums (n elements; 0 for an empty row).
template <class C>
REFK_HOST_DEVICE inline C row_mean(double sum, int64_t n) {
  const double inv_n = n == 0 ? 0.0 : 1.0 / static_cast<double>(n);
  return C(sum * inv_n);
}

// ATen's form of a per-channel affine normalization: x * scale + shift
// with scale = rstd * weight, shift = bias - mean * scale.
template <class C>
REFK_HOST_DEVICE inline C affine_scale(C rstd, C w) {
  return rstd * w;
}
template <class C>
REFK_HOST_DEVICE inline C affine_shift(C mean, C scale, C b) {
  return b - mean * scale;
}

// Batch norm's running statistics: (1 - momentum) * r + momentum * stat,
// the variance's stat unbiased over the channel's `count` elements.
REFK_HOST_DEVICE inline double running_update(double r, double stat, double momentum) {
  return (1 - momentum) * r + momentum * stat;
}
REFK_HOST_DEVICE inline double unbiased_var(double var, int64_t count) {
  return var * static_cast<double>(count) / static_cast<double>(count - 1);
}

}  // namespace norm
}  // namespace refk
