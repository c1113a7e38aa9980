// Binary elementwise kernels of the CUDA reference library: one kernel per
// dtype and form (same dtype, bool out), the op a uniform switch, each
// element's numerics common/Pointwise.h's (shared with the CPU library):
// NaN propagation, Python-style modulo, floor division, integer powers,
// shifts past the width. Integer division by zero raises as on the CPU
// device: the kernel sets a device flag, and the host reads it back (one
// stream sync, only for integer division and modulo).
#include "kernels/common/Pointwise.h"
#include "kernels/cuda/Common.cuh"

namespace refkc {
namespace {

namespace scalar = refk::scalar;

__device__ int g_zero_division;

// Records an integer division by zero for the host to read back.
struct ZeroDivision {
  __device__ void operator()() const { g_zero_division = 1; }
};

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
        case refkMaximum: return scalar::maximum(x, y);
        case refkMinimum: return scalar::minimum(x, y);
        case refkRemainder: return scalar::python_mod(x, y, ZeroDivision{});
        case refkDivFloor: return scalar::floor_divide(x, y, ZeroDivision{});
        default: break;
      }
      if constexpr (is_integral_v<T>) {
        const V alpha = static_cast<V>(alpha_s.i);
        switch (op) {
          case refkAdd: return V(x + alpha * y);
          case refkSub: return V(x - alpha * y);
          case refkDivTrunc: return scalar::div_trunc_integral(x, y, ZeroDivision{});
          case refkFmod: return scalar::fmod_integral(x, y, ZeroDivision{});
          case refkPow: return scalar::int_pow(x, y);
          case refkThresholdBackward: return scalar::threshold_backward(x, y, alpha);
          case refkBitwiseAnd: return V(x & y);
          case refkBitwiseOr: return V(x | y);
          case refkBitwiseXor: return V(x ^ y);
          case refkLshift: return scalar::lshift(x, y);
          default: return scalar::rshift(x, y);
        }
      } else {
        const V alpha = static_cast<V>(alpha_s.f);
        switch (op) {
          case refkAdd: return alpha == V(1) ? x + y : x + alpha * y;
          case refkSub: return x - alpha * y;
          case refkDiv: return x / y;
          case refkDivTrunc: return trunc(x / y);
          case refkFmod: return fmod(x, y);
          case refkPow: return scalar::pow(x, y);
          case refkAtan2: return atan2(x, y);
          case refkHypot: return hypot(x, y);
          case refkCopysign: return copysign(x, y);
          case refkFmax: return fmax(x, y);
          case refkFmin: return fmin(x, y);
          case refkXlogy: return scalar::xlogy(x, y);
          // Activation backwards (x: the incoming gradient; y: the forward's
          // input or output).
          case refkThresholdBackward: return scalar::threshold_backward(x, y, alpha);
          case refkSigmoidBackward: return scalar::sigmoid_backward(x, y);
          case refkTanhBackward: return scalar::tanh_backward(x, y);
          case refkGeluBackwardNone: return scalar::gelu_backward(x, y);
          case refkGeluBackwardTanh: return scalar::gelu_tanh_backward(x, y);
          default: return scalar::logaddexp(x, y);
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

// refkTernary's ops; the weight of a scalar lerp is a kernel argument.
template <class T>
struct Ternary {
  refkTernaryOp op;
  opmath_t<T> s;
  __device__ opmath_t<T> operator()(opmath_t<T> x, opmath_t<T> p, opmath_t<T> q) const {
    if constexpr (is_floating_v<T>) {
      switch (op) {
        case refkAddcdiv: return refk::scalar::addcdiv(x, p, q, s);
        case refkLerp: return refk::scalar::lerp(x, p, q);
        default: break;
      }
    }
    return refk::scalar::addcmul(x, p, q, s);
  }
};
template <class T>
struct LerpScalar {
  opmath_t<T> w;
  __device__ opmath_t<T> operator()(opmath_t<T> x, opmath_t<T> e) const { return refk::scalar::lerp(x, e, w); }
};

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

extern "C" refkStatus refkTernary(const refkContext* ctx, refkTernaryOp op, const refkTensor* out,
                                  const refkTensor* self, const refkTensor* a, const refkTensor* b,
                                  refkScalar value) {
  if (auto s = checked(refk::check::ternary(op, *out, *self, *a, *b))) return s;
  return dispatch(out->dtype, [&](auto tag) -> refkStatus {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      return unsupported("ternary", out->dtype);
    } else {
      using V = opmath_t<T>;
      if constexpr (is_floating_v<T>) {
        if (op == refkLerp && b->data == nullptr) {
          const refkTensor* ops[3] = {out, self, a};
          return typed<T, T, 2>("ternary", ctx, ops, LerpScalar<T>{V(value.f)});
        }
      }
      const refkTensor* ops[4] = {out, self, a, b};
      return typed<T, T, 3>("ternary", ctx, ops, Ternary<T>{op, is_floating_v<T> ? V(value.f) : V(value.i)});
    }
  });
}
