// The scalar semantics of the pointwise ops, written once for every device
// (Note [One definition per semantics] in Dtypes.h): what one element of
// refkUnary and refkBinary computes, in opmath (float for the half types),
// with ATen's CPU edge cases (NaN propagation, Python-style modulo, floor
// division, integer powers, shifts past the width, gelu at +inf). Each is a
// small inline function the CPU library wraps in a lambda per op (a loop
// the compiler vectorizes) and the CUDA library calls from a switch in one
// kernel per dtype. Ops that are one math function (exp, sin, ...) call it
// directly on both sides.
//
// Integer division by zero raises ZeroDivisionError on both devices, but
// how a kernel reports it is the device's: functions that may divide by
// zero take a callable `zero_division` to call first.
#pragma once

#include "kernels/common/Dtypes.h"

#include <limits>

namespace refk {
namespace scalar {

// x < 0, without a "comparison is always false" warning for unsigned types.
template <class V>
REFK_HOST_DEVICE inline bool negative(V x) {
  if constexpr (std::is_unsigned_v<V>) {
    return false;
  } else {
    return x < V(0);
  }
}

// std::max and std::min as written: the first operand wins ties and NaNs
// in the second, a NaN first operand passes through.
template <class V>
REFK_HOST_DEVICE inline V max_of(V a, V b) {
  return a < b ? b : a;
}
template <class V>
REFK_HOST_DEVICE inline V min_of(V a, V b) {
  return b < a ? b : a;
}

// ---- unary ------------------------------------------------------------------

template <class V>
REFK_HOST_DEVICE inline bool signbit(V x) {
  if constexpr (std::is_same_v<V, float>) {
    // Through the bits: GCC 12 fails to compile a vectorized std::signbit.
    return (float_to_bits(x) >> 31) != 0;
  } else if constexpr (std::is_same_v<V, double>) {
#if defined(__CUDA_ARCH__)
    const uint64_t w = static_cast<uint64_t>(__double_as_longlong(x));
#else
    uint64_t w;
    std::memcpy(&w, &x, 8);
#endif
    return (w >> 63) != 0;
  } else {
    return negative(x);
  }
}

template <class V>
REFK_HOST_DEVICE inline V abs(V x) {
  if constexpr (std::is_unsigned_v<V>) {
    return x;
  } else {
    return x < V(0) ? V(-x) : V(x == V(0) ? V(0) : x);
  }
}
template <class V>
REFK_HOST_DEVICE inline V sign(V x) {
  return V((V(0) < x) - negative(x));
}
template <class V>
REFK_HOST_DEVICE inline V relu(V x) {
  return negative(x) ? V(0) : x;
}
// NaN stays NaN (floating V).
template <class V>
REFK_HOST_DEVICE inline V hardtanh(V x, V lo, V hi) {
  if constexpr (std::is_floating_point_v<V>) {
    if (std::isnan(x)) return x;
  }
  return x < lo ? lo : (x > hi ? hi : x);
}
// round(x, decimals) for decimals != 0, half to even as torch.round.
template <class V>
REFK_HOST_DEVICE inline V round_decimals(V x, int64_t d) {
  const V ten = std::pow(V(10), V(d < 0 ? -d : d));
  return d < 0 ? std::nearbyint(x / ten) * ten : std::nearbyint(x * ten) / ten;
}
template <class V>
REFK_HOST_DEVICE inline V sigmoid(V x) {
  return V(1) / (V(1) + std::exp(-x));
}
template <class V>
REFK_HOST_DEVICE inline V silu(V x) {
  return x / (V(1) + std::exp(-x));
}
// As ATen's scalar loop and its AVX2 kernels: 0.5 * x * (1 + erf(x / sqrt 2)),
// so +inf gives +inf and nothing overflows below the dtype's max. ATen's
// AVX512 float kernels differ there (NaN at +inf, x * (1 + erf) * 0.5
// overflowing near the max): Note [CPU capability] in opgen-backend's
// src/conformance/expectations.ts, and backends/ref's expectations file.
template <class V>
REFK_HOST_DEVICE inline V gelu(V x) {
  const V e = V(1) + std::erf(x * V(0.70710678118654752440));
  return V(0.5) * x * e;
}
template <class V>
REFK_HOST_DEVICE inline V gelu_tanh(V x) {
  const V inner = V(0.79788456080286535588) * (x + V(0.044715) * x * x * x);
  return V(0.5) * x * (V(1) + std::tanh(inner));
}
template <class V>
REFK_HOST_DEVICE inline V elu(V x, V alpha, V scale, V input_scale) {
  return x <= V(0) ? std::expm1(x * input_scale) * alpha * scale : x * scale;
}
template <class V>
REFK_HOST_DEVICE inline V leaky_relu(V x, V slope) {
  return x > V(0) ? x : x * slope;
}
template <class V>
REFK_HOST_DEVICE inline V hardsigmoid(V x) {
  return min_of(max_of(x + V(3), V(0)), V(6)) / V(6);
}
template <class V>
REFK_HOST_DEVICE inline V hardswish(V x) {
  return x * min_of(max_of(x + V(3), V(0)), V(6)) / V(6);
}
template <class V>
REFK_HOST_DEVICE inline V softplus(V x, V beta, V threshold) {
  return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta;
}
template <class V>
REFK_HOST_DEVICE inline V mish(V x) {
  return x * std::tanh(std::log1p(std::exp(x)));
}

// clamp(x, lo, hi) with either bound optional; a NaN input or bound gives
// NaN (floating V), as ATen's.
template <class V>
REFK_HOST_DEVICE inline V clamp(V x, V lo, V hi, bool has_lo, bool has_hi) {
  if constexpr (std::is_floating_point_v<V>) {
    if (std::isnan(x)) return x;
    if (has_lo && std::isnan(lo)) return lo;
    if (has_hi && std::isnan(hi)) return hi;
  }
  if (has_lo && x < lo) x = lo;
  if (has_hi && x > hi) x = hi;
  return x;
}

// log_sigmoid as ATen's CPU kernel (refkLogSigmoid): z = exp(-|x|) is what
// the forward saves for the backward, out = min(x, 0) - log1p(z) (NaN
// propagates), and the gradient uses z again.
template <class V>
REFK_HOST_DEVICE inline V log_sigmoid_buffer(V x) {
  return std::exp(-abs(x));
}
template <class V>
REFK_HOST_DEVICE inline V log_sigmoid(V x, V z) {
  return min_of(x, V(0)) - std::log1p(z);
}
template <class V>
REFK_HOST_DEVICE inline V log_sigmoid_backward(V g, V x, V z) {
  const bool in_negative = x < V(0);
  const V max_deriv = in_negative ? V(1) : V(0);
  const V sign = in_negative ? V(1) : V(-1);
  return (max_deriv - sign * (z / (V(1) + z))) * g;
}

// hardtanh's gradient: none at or past either bound, nor at a NaN input,
// as ATen's vectorized CPU loop (its scalar tail and CUDA's kernel pass the
// gradient at a NaN; which elements take the tail depends on the vector
// width, so the vector form is the one to match).
template <class V>
REFK_HOST_DEVICE inline V hardtanh_backward(V g, V x, V lo, V hi) {
  return (x > lo && x < hi) ? g : V(0);
}

// ---- binary -----------------------------------------------------------------

// maximum/minimum propagate NaN (floating V).
template <class V>
REFK_HOST_DEVICE inline V maximum(V x, V y) {
  if constexpr (std::is_floating_point_v<V>) {
    if (std::isnan(x) || std::isnan(y)) return x + y;
  }
  return x > y ? x : y;
}
template <class V>
REFK_HOST_DEVICE inline V minimum(V x, V y) {
  if constexpr (std::is_floating_point_v<V>) {
    if (std::isnan(x) || std::isnan(y)) return x + y;
  }
  return x < y ? x : y;
}

// ---- ternary ----------------------------------------------------------------

// refkTernary's ops and refkForeach's addcmul, addcdiv and lerp, as ATen's
// vectorized CPU loops compute them, fused multiply-adds included (which
// decide infinities and overflow: inf + max * -max is inf, not NaN):
// addcmul is fma(value * a, b, self) (integral V wraps, no fma), addcdiv
// self + value * a / b, and lerp fma(w or w - 1, end - self, self or end),
// from the start for small weights, from the end otherwise (exact at both
// ends).
template <class V>
REFK_HOST_DEVICE inline V addcmul(V self, V a, V b, V value) {
  if constexpr (std::is_floating_point_v<V>) {
    return std::fma(value * a, b, self);
  } else {
    return V(self + value * a * b);
  }
}
template <class V>
REFK_HOST_DEVICE inline V addcdiv(V self, V a, V b, V value) {
  return self + value * a / b;
}
template <class V>
REFK_HOST_DEVICE inline V lerp(V self, V end, V weight) {
  const bool small = abs(weight) < V(0.5);
  return std::fma(small ? weight : weight - V(1), end - self, small ? self : end);
}

// Python's a % b: the sign of b.
template <class V, class Z>
REFK_HOST_DEVICE inline V python_mod(V a, V b, Z zero_division) {
  if constexpr (std::is_floating_point_v<V>) {
    V m = std::fmod(a, b);
    if (m != V(0) && ((b < V(0)) != (m < V(0)))) m += b;
    return m;
  } else {
    if (b == 0) {
      zero_division();
      return 0;
    }
    if constexpr (std::is_signed_v<V>) {
      if (b == V(-1)) return 0;  // INT_MIN % -1 traps
    }
    V m = a % b;
    if (m != 0 && (negative(b) != negative(m))) m += b;
    return m;
  }
}

// a // b, rounded as ATen's div_floor (floating: from fmod, as Python).
template <class V, class Z>
REFK_HOST_DEVICE inline V floor_divide(V a, V b, Z zero_division) {
  if constexpr (std::is_floating_point_v<V>) {
    if (b == V(0)) return a / b;
    const V m = std::fmod(a, b);
    V div = (a - m) / b;
    if (m != V(0) && ((b < V(0)) != (m < V(0)))) div -= V(1);
    if (div == V(0)) return std::copysign(V(0), a / b);
    V fl = std::floor(div);
    if (div - fl > V(0.5)) fl += V(1);
    return fl;
  } else {
    if (b == 0) {
      zero_division();
      return 0;
    }
    if constexpr (std::is_signed_v<V>) {
      if (b == V(-1)) return V(-a);
    }
    const V q = a / b, r = a % b;
    return (r != 0 && (negative(r) != negative(b))) ? V(q - 1) : q;
  }
}

// Integral a / b rounded toward zero, and integral fmod.
template <class V, class Z>
REFK_HOST_DEVICE inline V div_trunc_integral(V x, V y, Z zero_division) {
  if (y == 0) {
    zero_division();
    return V(0);
  }
  if constexpr (std::is_signed_v<V>) {
    if (y == V(-1)) return V(-x);
  }
  return V(x / y);
}
template <class V, class Z>
REFK_HOST_DEVICE inline V fmod_integral(V x, V y, Z zero_division) {
  if (y == 0) {
    zero_division();
    return V(0);
  }
  if constexpr (std::is_signed_v<V>) {
    if (y == V(-1)) return V(0);
  }
  return V(x % y);
}

template <class V>
REFK_HOST_DEVICE inline V int_pow(V base, V exp) {
  if constexpr (std::is_signed_v<V>) {
    if (exp < 0) {
      if (base == 1) return 1;
      if (base == -1) return (exp % 2 == 0) ? 1 : -1;
      return 0;
    }
  }
  V result = 1;
  while (exp) {
    if (exp & 1) result = static_cast<V>(result * base);
    exp = static_cast<V>(exp >> 1);
    base = static_cast<V>(base * base);
  }
  return result;
}
template <class V>
REFK_HOST_DEVICE inline V pow(V x, V y) {
  if (y == V(2)) return x * x;
  return std::pow(x, y);
}

// Shifts by a negative amount or past the width: 0, or the sign for >>.
template <class V>
REFK_HOST_DEVICE inline V lshift(V x, V y) {
  using U = std::make_unsigned_t<V>;
  if (negative(y) || y >= V(sizeof(V) * 8)) return V(0);
  return static_cast<V>(static_cast<U>(x) << y);
}
template <class V>
REFK_HOST_DEVICE inline V rshift(V x, V y) {
  const V bits = V(sizeof(V) * 8);
  if (negative(y) || y >= bits) {
    if constexpr (std::is_signed_v<V>) return V(x >> (bits - 1));
    return V(0);
  }
  return V(x >> y);
}

template <class V>
REFK_HOST_DEVICE inline V xlogy(V x, V y) {
  if (std::isnan(y)) return y;
  if (x == V(0)) return V(0);
  return x * std::log(y);
}
template <class V>
REFK_HOST_DEVICE inline V logaddexp(V x, V y) {
  if (std::isinf(x) && x == y) return x;
  const V m = max_of(x, y);
  return m + std::log1p(std::exp(-std::abs(x - y)));
}

// Activation backwards: g the incoming gradient, x the forward's input or
// y its output (ATen's kernels' formulas).
template <class V>
REFK_HOST_DEVICE inline V threshold_backward(V g, V x, V threshold) {
  return x <= threshold ? V(0) : g;
}
template <class V>
REFK_HOST_DEVICE inline V sigmoid_backward(V g, V y) {
  return g * (V(1) - y) * y;
}
template <class V>
REFK_HOST_DEVICE inline V tanh_backward(V g, V y) {
  return g * (V(1) - y * y);
}
// ATen's GeluBackwardKernelImpl: g * (cdf(x) + x * pdf(x)).
template <class V>
REFK_HOST_DEVICE inline V gelu_backward(V g, V x) {
  const V cdf = V(0.5) * (V(1) + std::erf(x * V(0.70710678118654752440)));
  const V pdf = V(0.39894228040143267794) * std::exp(V(-0.5) * x * x);
  return g * (cdf + x * pdf);
}
template <class V>
REFK_HOST_DEVICE inline V gelu_tanh_backward(V g, V x) {
  const V beta = V(0.79788456080286535588), kappa = V(0.044715);
  const V x_sq = x * x;
  const V tanh_inner = std::tanh(beta * (x + kappa * x_sq * x));
  const V left_derivative = V(0.5) * (V(1) + tanh_inner);
  const V right_derivative = V(0.5) * x * (V(1) - tanh_inner * tanh_inner) * (beta * (V(1) + V(3) * kappa * x_sq));
  return g * (left_derivative + right_derivative);
}

// The backwards of refkUnaryBackward's activations, as ATen's CPU kernels
// write them (g the incoming gradient, x the forward's input).
template <class V>
REFK_HOST_DEVICE inline V silu_backward(V g, V x) {
  const V s = V(1) / (V(1) + std::exp(-x));
  return g * s * (V(1) + x * (V(1) - s));
}
template <class V>
REFK_HOST_DEVICE inline V mish_backward(V g, V x) {
  const V s = V(1) / (V(1) + std::exp(-x));
  const V t = std::tanh(std::log1p(std::exp(x)));
  return g * (t + x * s * (V(1) - t * t));
}
template <class V>
REFK_HOST_DEVICE inline V softplus_backward(V g, V x, V beta, V threshold) {
  const V z = std::exp(x * beta);
  return x * beta > threshold ? g : g * z / (z + V(1));
}
// ATen's one_sixth is the float 1.0f / 6.0f in every dtype.
template <class V>
REFK_HOST_DEVICE inline V hardsigmoid_backward(V g, V x) {
  return (x > V(-3) && x < V(3)) ? g * V(1.0f / 6.0f) : V(0);
}
// The scalar kernel's branches (a NaN input passes the gradient through).
template <class V>
REFK_HOST_DEVICE inline V hardswish_backward(V g, V x) {
  if (x < V(-3)) return V(0);
  if (x <= V(3)) return g * ((x / V(3)) + V(0.5));
  return g;
}

}  // namespace scalar

// tril/triu (refkTriangle): whether element (i, j) of a matrix is kept.
REFK_HOST_DEVICE inline bool triangle_keeps(int64_t i, int64_t j, int64_t diagonal, bool upper) {
  return upper ? j - i >= diagonal : j - i <= diagonal;
}

// Note [Histogram semantics] (RefKernels.h): the bin of one element, or -1
// when it counts nowhere. Floating T: in the storage type, each operation
// rounded to it (r), with lo and hi already of the dtype; integers: int64.
namespace histc {

template <class T>
REFK_HOST_DEVICE inline int64_t floating_bin(T x, T lo, T hi, int64_t bins) {
  using V = opmath_t<T>;
  const auto r = [](V v) { return load(store<T>(v)); };
  const V vx = load(x), vlo = load(lo), vhi = load(hi);
  if (!(vx >= vlo && vx <= vhi)) return -1;
  const V pos = r(r(r(vx - vlo) * r(static_cast<V>(bins))) / r(vhi - vlo));
  int64_t b = static_cast<int64_t>(pos);
  if (b == bins) b -= 1;
  return b;
}

REFK_HOST_DEVICE inline int64_t integer_bin(int64_t x, int64_t lo, int64_t hi, int64_t bins) {
  if (!(x >= lo && x <= hi)) return -1;
  int64_t b = static_cast<int>((x - lo) * bins / (hi - lo));
  if (b == bins) b -= 1;
  return b;
}

}  // namespace histc

// The optimizers' foreach ops (Note [Foreach calls] in RefKernels.h): one
// element of out[k] = op(self[k], a[k], b[k], s) in opmath V, for storage
// type T. The CPU library instantiates one row loop per op, the CUDA
// library one kernel per op.
namespace foreach {

inline int operands(refkForeachOp op) {
  switch (op) {
    case refkForeachAddScalar:
    case refkForeachMulScalar:
    case refkForeachDivScalar:
    case refkForeachSqrt:
    case refkForeachNeg: return 1;
    case refkForeachAdd:
    case refkForeachMul:
    case refkForeachDiv:
    case refkForeachLerp: return 2;
    case refkForeachAddcmul:
    case refkForeachAddcdiv: return 3;
  }
  return 0;
}

template <class T, refkForeachOp OP>
struct Fn {
  using V = opmath_t<T>;
  V s;
  // The scalar as the op uses it: ATen's add ufunc in the half types rounds
  // alpha (and alpha * b) to the type too.
  static Fn of(double scalar) {
    V v = static_cast<V>(scalar);
    if constexpr (OP == refkForeachAdd && is_half_v<T>) v = load(store<T>(v));
    return Fn{v};
  }
  REFK_HOST_DEVICE V operator()(V v, V p, V q) const {
    if constexpr (OP == refkForeachAddScalar) return v + s;
    if constexpr (OP == refkForeachMulScalar) return v * s;
    if constexpr (OP == refkForeachDivScalar) return v / s;
    if constexpr (OP == refkForeachAdd) {
      if constexpr (is_half_v<T>) return v + load(store<T>(s * p));
      else return v + s * p;
    }
    if constexpr (OP == refkForeachMul) return v * p;
    if constexpr (OP == refkForeachDiv) return v / p;
    if constexpr (OP == refkForeachAddcmul) return scalar::addcmul(v, p, q, s);
    if constexpr (OP == refkForeachAddcdiv) return scalar::addcdiv(v, p, q, s);
    if constexpr (OP == refkForeachSqrt) return std::sqrt(v);
    if constexpr (OP == refkForeachNeg) return -v;
    if constexpr (OP == refkForeachLerp) return scalar::lerp(v, p, s);
    (void)p, (void)q;
    return v;
  }
};

// Calls f(Fn<T, OP>) for the runtime op (f is generic over the functor).
template <class T, class F>
void with_fn(refkForeachOp op, double scalar, F&& f) {
  switch (op) {
    case refkForeachAddScalar: return f(Fn<T, refkForeachAddScalar>::of(scalar));
    case refkForeachMulScalar: return f(Fn<T, refkForeachMulScalar>::of(scalar));
    case refkForeachDivScalar: return f(Fn<T, refkForeachDivScalar>::of(scalar));
    case refkForeachAdd: return f(Fn<T, refkForeachAdd>::of(scalar));
    case refkForeachMul: return f(Fn<T, refkForeachMul>::of(scalar));
    case refkForeachDiv: return f(Fn<T, refkForeachDiv>::of(scalar));
    case refkForeachLerp: return f(Fn<T, refkForeachLerp>::of(scalar));
    case refkForeachAddcmul: return f(Fn<T, refkForeachAddcmul>::of(scalar));
    case refkForeachAddcdiv: return f(Fn<T, refkForeachAddcdiv>::of(scalar));
    case refkForeachSqrt: return f(Fn<T, refkForeachSqrt>::of(scalar));
    case refkForeachNeg: return f(Fn<T, refkForeachNeg>::of(scalar));
  }
}

}  // namespace foreach

// ---- fused bias + GELU ------------------------------------------------------
//
// One element of refkBiasGelu and refkBiasGeluBackward, on element pointers
// (b is NULL without a bias). x + bias is rounded to the storage type
// before GELU sees it, as eager's gelu(self + bias) rounds the sum.
namespace fused {

template <class T>
REFK_HOST_DEVICE inline opmath_t<T> biased(const char* x, const char* b) {
  const T v = *reinterpret_cast<const T*>(x);
  if (b == nullptr) return load(v);
  return load(store<T>(load(v) + load(*reinterpret_cast<const T*>(b))));
}

template <class T>
REFK_HOST_DEVICE inline T bias_gelu(const char* x, const char* b, bool tanh) {
  const opmath_t<T> v = biased<T>(x, b);
  return store<T>(tanh ? scalar::gelu_tanh(v) : scalar::gelu(v));
}

// grad_in = gelu'(x + bias) * grad.
template <class T>
REFK_HOST_DEVICE inline T bias_gelu_backward(const char* grad, const char* x, const char* b, bool tanh) {
  const opmath_t<T> g = load(*reinterpret_cast<const T*>(grad)), v = biased<T>(x, b);
  return store<T>(tanh ? scalar::gelu_tanh_backward(g, v) : scalar::gelu_backward(g, v));
}

}  // namespace fused
}  // namespace refk
