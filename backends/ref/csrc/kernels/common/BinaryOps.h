// The op table of refkBinary over the real dtypes, written once for both
// devices (Note [Pointwise op tables] in UnaryOps.h): Fn<T, OP, Z> is one
// op's element function in opmath, with_fn<T, Z>(op, alpha, f) calls
// f(Fn<T, OP, Z>) for the runtime op and returns false where the op does not
// exist for storage type T. Z is the device's way to record an integer
// division by zero (Pointwise.h). Complex operands are the CPU library's
// own (cpu/Binary.cpp, common/Complex.h).
#pragma once

#include "kernels/common/Pointwise.h"

namespace refk {
namespace binary {

// A form of refkAdd with a loop of its own: alpha == 1.
constexpr int kAddOne = -1;

// Ops that write bool (any input dtype).
REFK_HOST_DEVICE constexpr bool is_predicate(int op) { return op >= refkEq && op <= refkLogicalXor; }

template <class T, int OP, class Z>
struct Fn {
  using V = opmath_t<T>;
  static constexpr bool predicate = is_predicate(OP);
  // Integer division and modulo may divide by zero (and then call Z).
  static constexpr bool divides =
      is_integral_v<T> && (OP == refkDivTrunc || OP == refkDivFloor || OP == refkFmod || OP == refkRemainder);
  V alpha;

  REFK_HOST_DEVICE auto operator()(V x, V y) const {
    if constexpr (OP == refkEq) return x == y;
    else if constexpr (OP == refkNe) return x != y;
    else if constexpr (OP == refkLt) return x < y;
    else if constexpr (OP == refkLe) return x <= y;
    else if constexpr (OP == refkGt) return x > y;
    else if constexpr (OP == refkGe) return x >= y;
    else if constexpr (OP == refkLogicalAnd) return (x != V(0)) && (y != V(0));
    else if constexpr (OP == refkLogicalOr) return (x != V(0)) || (y != V(0));
    else if constexpr (OP == refkLogicalXor) return (x != V(0)) != (y != V(0));
    else if constexpr (std::is_same_v<T, bool>) {
      if constexpr (OP == refkBitwiseAnd || OP == refkMul || OP == refkMinimum) return x && y;
      else if constexpr (OP == refkBitwiseOr || OP == refkAdd || OP == kAddOne || OP == refkMaximum) return x || y;
      else {
        static_assert(OP == refkBitwiseXor, "binary::Fn: a bool op with_fn does not list");
        return x != y;
      }
    }
    else if constexpr (OP == refkMul) return V(x * y);
    else if constexpr (OP == refkMaximum) return scalar::maximum(x, y);
    else if constexpr (OP == refkMinimum) return scalar::minimum(x, y);
    else if constexpr (OP == refkRemainder) return scalar::python_mod(x, y, Z{});
    else if constexpr (OP == refkDivFloor) return scalar::floor_divide(x, y, Z{});
    else if constexpr (OP == kAddOne) return V(x + y);
    else if constexpr (OP == refkAdd) return V(x + alpha * y);
    else if constexpr (OP == refkSub) return V(x - alpha * y);
    // Activation backwards: x the incoming gradient, y the forward's input
    // or output; alpha the threshold.
    else if constexpr (OP == refkThresholdBackward) return scalar::threshold_backward(x, y, alpha);
    else if constexpr (is_integral_v<T>) {
      if constexpr (OP == refkDivTrunc) return scalar::div_trunc_integral(x, y, Z{});
      else if constexpr (OP == refkFmod) return scalar::fmod_integral(x, y, Z{});
      else if constexpr (OP == refkPow) return scalar::int_pow(x, y);
      else if constexpr (OP == refkBitwiseAnd) return V(x & y);
      else if constexpr (OP == refkBitwiseOr) return V(x | y);
      else if constexpr (OP == refkBitwiseXor) return V(x ^ y);
      else if constexpr (OP == refkLshift) return scalar::lshift(x, y);
      else {
        static_assert(OP == refkRshift, "binary::Fn: an integer op with_fn does not list");
        return scalar::rshift(x, y);
      }
    }
    else if constexpr (OP == refkDiv) return x / y;
    else if constexpr (OP == refkDivTrunc) return std::trunc(x / y);
    else if constexpr (OP == refkFmod) return std::fmod(x, y);
    else if constexpr (OP == refkPow) return scalar::pow(x, y);
    else if constexpr (OP == refkAtan2) return std::atan2(x, y);
    else if constexpr (OP == refkHypot) return std::hypot(x, y);
    else if constexpr (OP == refkCopysign) return std::copysign(x, y);
    else if constexpr (OP == refkFmax) return std::fmax(x, y);
    else if constexpr (OP == refkFmin) return std::fmin(x, y);
    else if constexpr (OP == refkXlogy) return scalar::xlogy(x, y);
    else if constexpr (OP == refkSigmoidBackward) return scalar::sigmoid_backward(x, y);
    else if constexpr (OP == refkTanhBackward) return scalar::tanh_backward(x, y);
    else if constexpr (OP == refkGeluBackwardNone) return scalar::gelu_backward(x, y);
    else if constexpr (OP == refkGeluBackwardTanh) return scalar::gelu_tanh_backward(x, y);
    else {
      static_assert(OP == refkLogaddexp, "binary::Fn: a floating op with_fn does not list");
      return scalar::logaddexp(x, y);
    }
  }
};

template <class Fn, class F>
REFK_HOST_DEVICE inline bool apply(typename Fn::V alpha, F& f) {
  f(Fn{alpha});
  return true;
}

#define REFK_BINARY_CASE(OP) \
  case OP: return apply<Fn<T, OP, Z>>(alpha, f)

// Calls f(Fn<T, OP, Z>{alpha}) for the runtime op (alpha: refkScalar's
// field for T); false (f not called) where the op does not exist for T:
// comparisons and logical ops for every dtype, the and/or/xor forms on
// bool, arithmetic, bitwise ops and shifts on integers, arithmetic, math
// and activation backwards on floating dtypes.
template <class T, class Z, class F>
REFK_HOST_DEVICE bool with_fn(refkBinaryOp op, refkScalar alpha_s, F&& f) {
  using V = opmath_t<T>;
  const V alpha = is_floating_v<T> ? static_cast<V>(alpha_s.f) : static_cast<V>(alpha_s.i);
  switch (op) {
    REFK_BINARY_CASE(refkEq);
    REFK_BINARY_CASE(refkNe);
    REFK_BINARY_CASE(refkLt);
    REFK_BINARY_CASE(refkLe);
    REFK_BINARY_CASE(refkGt);
    REFK_BINARY_CASE(refkGe);
    REFK_BINARY_CASE(refkLogicalAnd);
    REFK_BINARY_CASE(refkLogicalOr);
    REFK_BINARY_CASE(refkLogicalXor);
    default: break;
  }
  if constexpr (std::is_same_v<T, bool>) {
    switch (op) {
      REFK_BINARY_CASE(refkBitwiseAnd);
      REFK_BINARY_CASE(refkMul);
      REFK_BINARY_CASE(refkMinimum);
      REFK_BINARY_CASE(refkBitwiseOr);
      REFK_BINARY_CASE(refkAdd);
      REFK_BINARY_CASE(refkMaximum);
      REFK_BINARY_CASE(refkBitwiseXor);
      default: return false;
    }
  } else {
    switch (op) {
      REFK_BINARY_CASE(refkMul);
      REFK_BINARY_CASE(refkMaximum);
      REFK_BINARY_CASE(refkMinimum);
      REFK_BINARY_CASE(refkRemainder);
      REFK_BINARY_CASE(refkDivFloor);
      case refkAdd:
        if (alpha == V(1)) return apply<Fn<T, kAddOne, Z>>(alpha, f);
        return apply<Fn<T, refkAdd, Z>>(alpha, f);
      REFK_BINARY_CASE(refkSub);
      REFK_BINARY_CASE(refkDivTrunc);
      REFK_BINARY_CASE(refkFmod);
      REFK_BINARY_CASE(refkPow);
      REFK_BINARY_CASE(refkThresholdBackward);
      default: break;
    }
    if constexpr (is_integral_v<T>) {
      switch (op) {
        REFK_BINARY_CASE(refkBitwiseAnd);
        REFK_BINARY_CASE(refkBitwiseOr);
        REFK_BINARY_CASE(refkBitwiseXor);
        REFK_BINARY_CASE(refkLshift);
        REFK_BINARY_CASE(refkRshift);
        default: return false;
      }
    } else {
      switch (op) {
        REFK_BINARY_CASE(refkDiv);
        REFK_BINARY_CASE(refkAtan2);
        REFK_BINARY_CASE(refkHypot);
        REFK_BINARY_CASE(refkCopysign);
        REFK_BINARY_CASE(refkFmax);
        REFK_BINARY_CASE(refkFmin);
        REFK_BINARY_CASE(refkXlogy);
        REFK_BINARY_CASE(refkSigmoidBackward);
        REFK_BINARY_CASE(refkTanhBackward);
        REFK_BINARY_CASE(refkGeluBackwardNone);
        REFK_BINARY_CASE(refkGeluBackwardTanh);
        REFK_BINARY_CASE(refkLogaddexp);
        default: return false;
      }
    }
  }
}

#undef REFK_BINARY_CASE

// What the host asks of the table: whether an op exists for a dtype, and
// whether it may divide by zero (the visitor sees the op's Fn type only).
struct NoZeroDivision {
  REFK_HOST_DEVICE void operator()() const {}
};
struct Divides {
  bool* divides;
  template <class Fn>
  REFK_HOST_DEVICE void operator()(const Fn&) const {
    *divides = Fn::divides;
  }
};

// Whether refkBinary computes `op` on the real dtype `d` (complex: no here).
inline bool supported(refkBinaryOp op, refkDtype d) {
  if (is_complex(d) || is_storage_only(d)) return false;
  bool divides = false;
  return dispatch(d, [&](auto tag) {
    return with_fn<typename decltype(tag)::type, NoZeroDivision>(op, refkScalar{1, 1}, Divides{&divides});
  });
}
// Whether `op` on `d` is an integer division or modulo, which may divide by zero.
inline bool may_divide_by_zero(refkBinaryOp op, refkDtype d) {
  if (is_complex(d) || is_storage_only(d)) return false;
  bool divides = false;
  dispatch(d, [&](auto tag) {
    return with_fn<typename decltype(tag)::type, NoZeroDivision>(op, refkScalar{1, 1}, Divides{&divides});
  });
  return divides;
}

}  // namespace binary
}  // namespace refk
