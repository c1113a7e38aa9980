// Binary elementwise kernels of the CPU reference library: arithmetic,
// division with rounding modes, powers, comparisons, logical and bitwise
// ops. Numerics follow ATen's CPU kernels (NaN propagation, Python-style
// modulo, floor division, integer powers, shifts past the width).
#include "kernels/cpu/Common.h"

#include <atomic>

namespace refk {
namespace {

template <class T>
using C = opmath_t<T>;

std::atomic<bool> g_zero_division{false};

template <class V>
V python_mod(V a, V b) {
  if constexpr (std::is_floating_point_v<V>) {
    V m = std::fmod(a, b);
    if (m != V(0) && ((b < V(0)) != (m < V(0)))) m += b;
    return m;
  } else {
    if (b == 0) {
      g_zero_division.store(true, std::memory_order_relaxed);
      return 0;
    }
    if constexpr (std::is_signed_v<V>) {
      if (b == V(-1)) return 0;  // INT_MIN % -1 traps
    }
    V m = a % b;
    if (m != 0 && ((b < 0) != (m < 0))) m += b;
    return m;
  }
}

template <class V>
V floor_divide(V a, V b) {
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
      g_zero_division.store(true, std::memory_order_relaxed);
      return 0;
    }
    if constexpr (std::is_signed_v<V>) {
      if (b == V(-1)) return V(-a);
    }
    const V q = a / b, r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? V(q - 1) : q;
  }
}

template <class V>
V int_pow(V base, V exp) {
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

template <class T>
refkStatus binary_typed(int threads, refkBinaryOp op, const refkTensor& out, const refkTensor& a,
                        const refkTensor& b, refkScalar alpha_s) {
  using V = C<T>;
  const refkTensor* ops[3] = {&out, &a, &b};
  const Loop<3> loop(ops);
  auto same = [&](auto f) {
    if (out.dtype != a.dtype) return fail(refkErrorInvalidValue, "binary: output dtype must match the inputs'");
    typed_rows<T, T, 2>(loop, threads, f);
    return refkSuccess;
  };
  auto predicate = [&](auto f) {
    if (out.dtype != refkBool) return fail(refkErrorInvalidValue, "binary: comparisons write bool");
    typed_rows<bool, T, 2>(loop, threads, [f](V x, V y) -> bool { return f(x, y); });
    return refkSuccess;
  };
  switch (op) {
    case refkEq: return predicate([](V x, V y) { return x == y; });
    case refkNe: return predicate([](V x, V y) { return x != y; });
    case refkLt: return predicate([](V x, V y) { return x < y; });
    case refkLe: return predicate([](V x, V y) { return x <= y; });
    case refkGt: return predicate([](V x, V y) { return x > y; });
    case refkGe: return predicate([](V x, V y) { return x >= y; });
    case refkLogicalAnd: return predicate([](V x, V y) { return (x != V(0)) && (y != V(0)); });
    case refkLogicalOr: return predicate([](V x, V y) { return (x != V(0)) || (y != V(0)); });
    case refkLogicalXor: return predicate([](V x, V y) { return (x != V(0)) != (y != V(0)); });
    default: break;
  }
  if constexpr (std::is_same_v<T, bool>) {
    switch (op) {
      case refkBitwiseAnd:
      case refkMul:
      case refkMinimum: return same([](bool x, bool y) { return x && y; });
      case refkBitwiseOr:
      case refkAdd:
      case refkMaximum: return same([](bool x, bool y) { return x || y; });
      case refkBitwiseXor: return same([](bool x, bool y) { return x != y; });
      default: return unsupported("binary", a.dtype);
    }
  } else {
    switch (op) {
      case refkMul: return same([](V x, V y) { return V(x * y); });
      case refkMaximum:
        return same([](V x, V y) {
          if constexpr (is_floating_v<T>) {
            if (std::isnan(x) || std::isnan(y)) return x + y;
          }
          return x > y ? x : y;
        });
      case refkMinimum:
        return same([](V x, V y) {
          if constexpr (is_floating_v<T>) {
            if (std::isnan(x) || std::isnan(y)) return x + y;
          }
          return x < y ? x : y;
        });
      case refkRemainder: return same([](V x, V y) { return python_mod(x, y); });
      case refkDivFloor: return same([](V x, V y) { return floor_divide(x, y); });
      default: break;
    }
    if constexpr (is_integral_v<T>) {
      const V alpha = static_cast<V>(alpha_s.i);
      switch (op) {
        case refkAdd:
          if (alpha == V(1)) return same([](V x, V y) { return V(x + y); });
          return same([alpha](V x, V y) { return V(x + alpha * y); });
        case refkSub: return same([alpha](V x, V y) { return V(x - alpha * y); });
        case refkDivTrunc:
          return same([](V x, V y) {
            if (y == 0) {
              g_zero_division.store(true, std::memory_order_relaxed);
              return V(0);
            }
            if constexpr (std::is_signed_v<V>) {
              if (y == V(-1)) return V(-x);
            }
            return V(x / y);
          });
        case refkFmod:
          return same([](V x, V y) {
            if (y == 0) {
              g_zero_division.store(true, std::memory_order_relaxed);
              return V(0);
            }
            if constexpr (std::is_signed_v<V>) {
              if (y == V(-1)) return V(0);
            }
            return V(x % y);
          });
        case refkPow: return same([](V x, V y) { return int_pow(x, y); });
        case refkThresholdBackward: return same([alpha](V g, V x) { return x <= alpha ? V(0) : g; });
        case refkBitwiseAnd: return same([](V x, V y) { return V(x & y); });
        case refkBitwiseOr: return same([](V x, V y) { return V(x | y); });
        case refkBitwiseXor: return same([](V x, V y) { return V(x ^ y); });
        case refkLshift:
          return same([](V x, V y) {
            using U = std::make_unsigned_t<V>;
            if (y < 0 || y >= V(sizeof(V) * 8)) return V(0);
            return static_cast<V>(static_cast<U>(x) << y);
          });
        case refkRshift:
          return same([](V x, V y) {
            const V bits = V(sizeof(V) * 8);
            if (y < 0 || y >= bits) {
              if constexpr (std::is_signed_v<V>) return V(x >> (bits - 1));
              return V(0);
            }
            return V(x >> y);
          });
        default: return unsupported("binary", a.dtype);
      }
    } else {
      const V alpha = static_cast<V>(alpha_s.f);
      switch (op) {
        case refkAdd:
          if (alpha == V(1)) return same([](V x, V y) { return x + y; });
          return same([alpha](V x, V y) { return x + alpha * y; });
        case refkSub: return same([alpha](V x, V y) { return x - alpha * y; });
        case refkDiv: return same([](V x, V y) { return x / y; });
        case refkDivTrunc: return same([](V x, V y) { return std::trunc(x / y); });
        case refkFmod: return same([](V x, V y) { return std::fmod(x, y); });
        case refkPow:
          return same([](V x, V y) {
            if (y == V(2)) return x * x;
            return std::pow(x, y);
          });
        case refkAtan2: return same([](V x, V y) { return std::atan2(x, y); });
        case refkHypot: return same([](V x, V y) { return std::hypot(x, y); });
        case refkCopysign: return same([](V x, V y) { return std::copysign(x, y); });
        case refkFmax: return same([](V x, V y) { return std::fmax(x, y); });
        case refkFmin: return same([](V x, V y) { return std::fmin(x, y); });
        case refkXlogy:
          return same([](V x, V y) {
            if (std::isnan(y)) return y;
            if (x == V(0)) return V(0);
            return x * std::log(y);
          });
        case refkThresholdBackward: return same([alpha](V g, V x) { return x <= alpha ? V(0) : g; });
        case refkSigmoidBackward: return same([](V g, V y) { return g * (V(1) - y) * y; });
        case refkTanhBackward: return same([](V g, V y) { return g * (V(1) - y * y); });
        case refkGeluBackwardNone:
          // ATen's GeluBackwardKernelImpl: dy * (cdf(x) + x * pdf(x)).
          return same([](V g, V x) {
            const V cdf = V(0.5) * (V(1) + std::erf(x * V(0.70710678118654752440)));
            const V pdf = V(0.39894228040143267794) * std::exp(V(-0.5) * x * x);
            return g * (cdf + x * pdf);
          });
        case refkGeluBackwardTanh:
          return same([](V g, V x) {
            const V beta = V(0.79788456080286535588), kappa = V(0.044715);
            const V x_sq = x * x;
            const V tanh_inner = std::tanh(beta * (x + kappa * x_sq * x));
            const V left_derivative = V(0.5) * (V(1) + tanh_inner);
            const V right_derivative =
                V(0.5) * x * (V(1) - tanh_inner * tanh_inner) * (beta * (V(1) + V(3) * kappa * x_sq));
            return g * (left_derivative + right_derivative);
          });
        case refkLogaddexp:
          return same([](V x, V y) {
            if (std::isinf(x) && x == y) return x;
            const V m = std::max(x, y);
            return m + std::log1p(std::exp(-std::abs(x - y)));
          });
        default: return unsupported("binary", a.dtype);
      }
    }
  }
}
}  // namespace
}  // namespace refk

using namespace refk;

extern "C" refkStatus refkBinary(const refkContext* ctx, refkBinaryOp op, const refkTensor* out, const refkTensor* a,
                      const refkTensor* b, refkScalar alpha) {
  return guarded("binary", [&] {
    if (auto s = check_shapes("binary", {out, a, b})) return s;
    if (a->dtype != b->dtype) return fail(refkErrorInvalidValue, "binary: inputs must share one dtype");
    const Access access({out, a, b});
    g_zero_division.store(false);
    const refkStatus s = dispatch(a->dtype, [&](auto tag) {
      return binary_typed<typename decltype(tag)::type>(ctx->num_threads, op, *out, *a, *b, alpha);
    });
    if (s == refkSuccess && g_zero_division.load()) return fail(refkErrorInvalidValue, "ZeroDivisionError");
    return s;
  });
}
