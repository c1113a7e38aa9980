// Binary elementwise kernels of the CUDA reference library: one kernel per
// dtype and form (same dtype, bool out), the op a uniform switch, numerics
// the CPU library's (kernels/cpu/Binary.cpp): NaN propagation,
// Python-style modulo, floor division, integer powers, shifts past the
// width. Integer division by zero raises as on the CPU device: the kernel
// sets a device flag, and the host reads it back (one stream sync, only
// for integer division and modulo).
#include "kernels/cuda/Common.cuh"

namespace refkc {
namespace {

__device__ int g_zero_division;

template <class V>
__device__ inline bool negative(V x) {
  if constexpr (std::is_unsigned_v<V>) return false;
  else return x < V(0);
}

__device__ inline void zero_division() { g_zero_division = 1; }

template <class V>
__device__ V python_mod(V a, V b) {
  if constexpr (std::is_floating_point_v<V>) {
    V m = fmod(a, b);
    if (m != V(0) && ((b < V(0)) != (m < V(0)))) m += b;
    return m;
  } else {
    if (b == 0) {
      zero_division();
      return 0;
    }
    if constexpr (std::is_signed_v<V>) {
      if (b == V(-1)) return 0;
    }
    V m = a % b;
    if (m != 0 && (negative(b) != negative(m))) m += b;
    return m;
  }
}

template <class V>
__device__ V floor_divide(V a, V b) {
  if constexpr (std::is_floating_point_v<V>) {
    if (b == V(0)) return a / b;
    const V m = fmod(a, b);
    V div = (a - m) / b;
    if (m != V(0) && ((b < V(0)) != (m < V(0)))) div -= V(1);
    if (div == V(0)) return copysign(V(0), a / b);
    V fl = floor(div);
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

template <class V>
__device__ V int_pow(V base, V exp) {
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
struct Compare {
  refkBinaryOp op;
  __device__ bool operator()(opmath_t<T> x, opmath_t<T> y) const {
    using V = opmath_t<T>;
    switch (op) {
      case refkEq: return x == y;
      case refkNe: return x != y;
      case refkLt: return x < y;
      case refkLe: return x <= y;
      case refkGt: return x > y;
      case refkGe: return x >= y;
      case refkLogicalAnd: return (x != V(0)) && (y != V(0));
      case refkLogicalOr: return (x != V(0)) || (y != V(0));
      default: return (x != V(0)) != (y != V(0));  // logical_xor
    }
  }
};

template <class T>
struct Same {
  refkBinaryOp op;
  refkScalar alpha_s;
  __device__ opmath_t<T> operator()(opmath_t<T> x, opmath_t<T> y) const {
    using V = opmath_t<T>;
    if constexpr (std::is_same_v<T, bool>) {
      switch (op) {
        case refkBitwiseAnd:
        case refkMul:
        case refkMinimum: return x && y;
        case refkBitwiseOr:
        case refkAdd:
        case refkMaximum: return x || y;
        default: return x != y;  // bitwise_xor
      }
    } else {
      switch (op) {
        case refkMul: return V(x * y);
        case refkMaximum:
          if constexpr (is_floating_v<T>) {
            if (isnan(x) || isnan(y)) return x + y;
          }
          return x > y ? x : y;
        case refkMinimum:
          if constexpr (is_floating_v<T>) {
            if (isnan(x) || isnan(y)) return x + y;
          }
          return x < y ? x : y;
        case refkRemainder: return python_mod(x, y);
        case refkDivFloor: return floor_divide(x, y);
        default: break;
      }
      if constexpr (is_integral_v<T>) {
        const V alpha = static_cast<V>(alpha_s.i);
        switch (op) {
          case refkAdd: return V(x + alpha * y);
          case refkSub: return V(x - alpha * y);
          case refkDivTrunc:
            if (y == 0) {
              zero_division();
              return V(0);
            }
            if constexpr (std::is_signed_v<V>) {
              if (y == V(-1)) return V(-x);
            }
            return V(x / y);
          case refkFmod:
            if (y == 0) {
              zero_division();
              return V(0);
            }
            if constexpr (std::is_signed_v<V>) {
              if (y == V(-1)) return V(0);
            }
            return V(x % y);
          case refkPow: return int_pow(x, y);
          case refkThresholdBackward: return y <= alpha ? V(0) : x;
          case refkBitwiseAnd: return V(x & y);
          case refkBitwiseOr: return V(x | y);
          case refkBitwiseXor: return V(x ^ y);
          case refkLshift: {
            using U = std::make_unsigned_t<V>;
            if (negative(y) || y >= V(sizeof(V) * 8)) return V(0);
            return static_cast<V>(static_cast<U>(x) << y);
          }
          default: {  // rshift
            const V bits = V(sizeof(V) * 8);
            if (negative(y) || y >= bits) {
              if constexpr (std::is_signed_v<V>) return V(x >> (bits - 1));
              return V(0);
            }
            return V(x >> y);
          }
        }
      } else {
        const V alpha = static_cast<V>(alpha_s.f);
        switch (op) {
          case refkAdd: return alpha == V(1) ? x + y : x + alpha * y;
          case refkSub: return x - alpha * y;
          case refkDiv: return x / y;
          case refkDivTrunc: return trunc(x / y);
          case refkFmod: return fmod(x, y);
          case refkPow: return y == V(2) ? x * x : pow(x, y);
          case refkAtan2: return atan2(x, y);
          case refkHypot: return hypot(x, y);
          case refkCopysign: return copysign(x, y);
          case refkFmax: return fmax(x, y);
          case refkFmin: return fmin(x, y);
          case refkXlogy:
            if (isnan(y)) return y;
            if (x == V(0)) return V(0);
            return x * log(y);
          // Activation backwards (x: the incoming gradient; y: the forward's
          // input or output), the CPU library's formulas (ATen's kernels).
          case refkThresholdBackward: return y <= alpha ? V(0) : x;
          case refkSigmoidBackward: return x * (V(1) - y) * y;
          case refkTanhBackward: return x * (V(1) - y * y);
          case refkGeluBackwardNone: {
            const V cdf = V(0.5) * (V(1) + erf(y * V(0.70710678118654752440)));
            const V pdf = V(0.39894228040143267794) * exp(V(-0.5) * y * y);
            return x * (cdf + y * pdf);
          }
          case refkGeluBackwardTanh: {
            const V beta = V(0.79788456080286535588), kappa = V(0.044715);
            const V y_sq = y * y;
            const V tanh_inner = tanh(beta * (y + kappa * y_sq * y));
            const V left = V(0.5) * (V(1) + tanh_inner);
            const V right = V(0.5) * y * (V(1) - tanh_inner * tanh_inner) * (beta * (V(1) + V(3) * kappa * y_sq));
            return x * (left + right);
          }
          default: {  // logaddexp
            if (isinf(x) && x == y) return x;
            const V m = x > y ? x : y;
            return m + log1p(exp(-fabs(x - y)));
          }
        }
      }
    }
  }
};

bool is_comparison(refkBinaryOp op) { return op >= refkEq && op <= refkLogicalXor; }

// Which (op, dtype) pairs the CPU library has; every op is named, so an op
// added to RefKernels.h later is refused here (not implemented) instead of
// reaching a kernel's default case.
bool known(refkBinaryOp op) { return op >= refkAdd && op <= refkTanhBackward; }

bool supported(refkBinaryOp op, refkDtype d) {
  if (is_comparison(op)) return true;
  const bool floating = d == refkFloat16 || d == refkBFloat16 || d == refkFloat32 || d == refkFloat64;
  if (d == refkBool) {
    switch (op) {
      case refkBitwiseAnd:
      case refkMul:
      case refkMinimum:
      case refkBitwiseOr:
      case refkAdd:
      case refkMaximum:
      case refkBitwiseXor: return true;
      default: return false;
    }
  }
  switch (op) {
    case refkMul:
    case refkMaximum:
    case refkMinimum:
    case refkRemainder:
    case refkDivFloor:
    case refkAdd:
    case refkSub:
    case refkDivTrunc:
    case refkFmod:
    case refkPow:
    case refkThresholdBackward: return true;
    case refkBitwiseAnd:
    case refkBitwiseOr:
    case refkBitwiseXor:
    case refkLshift:
    case refkRshift: return !floating;
    case refkDiv:
    case refkAtan2:
    case refkFmax:
    case refkFmin:
    case refkHypot:
    case refkCopysign:
    case refkXlogy:
    case refkLogaddexp:
    case refkGeluBackwardNone:
    case refkGeluBackwardTanh:
    case refkSigmoidBackward:
    case refkTanhBackward: return floating;
    default: return false;
  }
}

bool may_divide_by_zero(refkBinaryOp op, refkDtype d) {
  const bool integral = d == refkUInt8 || d == refkInt8 || d == refkInt16 || d == refkInt32 || d == refkInt64;
  return integral && (op == refkDivTrunc || op == refkDivFloor || op == refkFmod || op == refkRemainder);
}

}  // namespace
}  // namespace refkc

using namespace refkc;

extern "C" refkStatus refkBinary(const refkContext* ctx, refkBinaryOp op, const refkTensor* out, const refkTensor* a,
                                 const refkTensor* b, refkScalar alpha) {
  if (auto s = check_shapes("binary", {out, a, b})) return s;
  if (!known(op)) return not_implemented("refkBinary (this op)");
  if (a->dtype != b->dtype) return fail(refkErrorInvalidValue, "binary: inputs must share one dtype");
  if (!supported(op, a->dtype)) return unsupported("binary", a->dtype);
  if (is_comparison(op)) {
    if (out->dtype != refkBool) return fail(refkErrorInvalidValue, "binary: comparisons write bool");
  } else if (out->dtype != a->dtype) {
    return fail(refkErrorInvalidValue, "binary: output dtype must match the inputs'");
  }
  const bool check_zero = may_divide_by_zero(op, a->dtype) && numel(*out) > 0;
  int* flag = nullptr;
  if (check_zero) {
    if (cudaGetSymbolAddress(reinterpret_cast<void**>(&flag), g_zero_division) != cudaSuccess ||
        cudaMemsetAsync(flag, 0, sizeof(int), stream_of(ctx)) != cudaSuccess) {
      return launched("binary");
    }
  }
  const refkTensor* ops[3] = {out, a, b};
  const refkStatus s = dispatch(a->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (is_comparison(op)) return typed<bool, T, 2>("binary", ctx, ops, Compare<T>{op});
    return typed<T, T, 2>("binary", ctx, ops, Same<T>{op, alpha});
  });
  if (s != refkSuccess || !check_zero) return s;
  int hit = 0;
  if (cudaMemcpyAsync(&hit, flag, sizeof(int), cudaMemcpyDeviceToHost, stream_of(ctx)) != cudaSuccess ||
      cudaStreamSynchronize(stream_of(ctx)) != cudaSuccess) {
    return launched("binary");
  }
  return hit != 0 ? fail(refkErrorInvalidValue, "ZeroDivisionError") : refkSuccess;
}
